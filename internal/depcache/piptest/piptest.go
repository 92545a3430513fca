// Package piptest makes Python wheels for tests: pure-Python, built
// here with archive/zip, so no network and no build tool are needed.
package piptest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// Wheel is the file name and bytes of a py3-none-any wheel of name and
// version holding files (path, content pairs) plus the METADATA, WHEEL
// and RECORD a wheel carries; RECORD lists every file with its sha256,
// as pip checks it.
func Wheel(name, version string, files ...[2]string) (string, []byte, error) {
	di := name + "-" + version + ".dist-info"
	files = append(files,
		[2]string{di + "/METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
		[2]string{di + "/WHEEL", "Wheel-Version: 1.0\nGenerator: airlock-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"})
	var record strings.Builder
	for _, f := range files {
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	record.WriteString(di + "/RECORD,,\n")
	files = append(files, [2]string{di + "/RECORD", record.String()})
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, f := range files {
		w, err := z.Create(f[0])
		if err != nil {
			return "", nil, err
		}
		if _, err := w.Write([]byte(f[1])); err != nil {
			return "", nil, err
		}
	}
	if err := z.Close(); err != nil {
		return "", nil, err
	}
	return name + "-" + version + "-py3-none-any.whl", b.Bytes(), nil
}
