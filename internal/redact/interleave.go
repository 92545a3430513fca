package redact

// findInterleaved finds known values written with one separator byte
// between characters: spaced out ("s e c r e t"), dotted or dashed, and
// UTF-16 of ASCII text (a NUL after each character, or before it). It
// looks for runs in which every other byte is the same separator, for at
// least minSecret characters (ordinary text seldom has one), takes the
// characters out and searches them for every form of every value; a hit
// is reported with its separators.
func (k *known) findInterleaved(b []byte, add func(start, end int)) {
	const minRun = 2*minSecret - 1
	var chars []byte
	// A run of minSecret characters has minSecret-1 >= 5 separators over
	// 9 or more bytes, so probing 4 bytes (two pairs two apart) every 4
	// bytes cannot miss one.
	for p := 0; p+minRun <= len(b); p += 4 {
		q := p
		if !(sepTab[b[q]] && b[q+2] == b[q]) {
			q++
			if !(sepTab[b[q]] && b[q+2] == b[q]) {
				continue
			}
		}
		sep := b[q]
		// back to the run's first character
		i := q - 1
		for i >= 2 && b[i-1] == sep && b[i] != sep && b[i-2] != sep {
			i -= 2
		}
		if i < 0 || b[i] == sep {
			continue
		}
		j := i
		for j+2 < len(b) && b[j+1] == sep && b[j+2] != sep {
			j += 2
		}
		if (j-i)/2+1 >= minSecret {
			chars = k.searchRun(b, i, j, sep, chars, add)
		}
		// go on after the run, on the probe grid
		if next := j + 1; next > p+4 {
			p = next - 4
		}
	}
}

// searchRun searches the characters b[i], b[i+2], ... b[j] of a run with
// separator sep.
func (k *known) searchRun(b []byte, i, j int, sep byte, chars []byte, add func(start, end int)) []byte {
	chars = chars[:0]
	for p := i; p <= j; p += 2 {
		chars = append(chars, b[p])
	}
	k.scan(chars, false, func(s, e int) {
		hs, he := i+2*s, i+2*(e-1)+1
		if he < len(b) && b[he] == sep && he == j+1 {
			he++ // UTF-16LE: the NUL after the last character
		}
		if sep == 0 && hs > 0 && b[hs-1] == 0 {
			hs-- // UTF-16BE: the NUL before the first character
		}
		add(hs, he)
	})
	return chars
}

// sepTab: the bytes put between characters to space them out, and NUL
// (UTF-16).
var sepTab = func() (t [256]bool) {
	for _, c := range []byte{0, ' ', '\t', '.', '-', '_', ',', ':', ';', '|', '/', '+', '*'} {
		t[c] = true
	}
	return t
}()
