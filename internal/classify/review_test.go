package classify

import (
	"slices"
	"testing"
)

// Cases from an adversarial review of the policy plane: what ran
// unattended under the default policy although it runs, deletes, installs
// or reaches out. (The ones that need a decision are policy's.)

type hasCase struct {
	line string
	want Class // the line must have this class
}

func checkHas(t *testing.T, cases []hasCase) {
	t.Helper()
	for _, tc := range cases {
		a := Analyze(tc.line, "")
		if !a.Has(tc.want) {
			t.Errorf("%s: classes %v, want %s among them", tc.line, a.Classes, tc.want)
		}
	}
}

// checkOnly: the line's classes are exactly want (inert variants of the
// cases above must not be held).
func checkOnly(t *testing.T, cases map[string][]Class) {
	t.Helper()
	for line, want := range cases {
		if got := Analyze(line, "").Classes; !slices.Equal(got, want) {
			t.Errorf("%s: classes %v, want %v", line, got, want)
		}
	}
}

func TestGitConfigThatRunsCommands(t *testing.T) {
	checkHas(t, []hasCase{
		{`git -c core.fsmonitor='rm -rf x' status`, Destructive},
		{`git -c core.fsmonitor=./hook status`, Unknown},
		{`git -c diff.external='curl https://example.com' diff`, Network},
		{`git -c core.editor='rm -f a' commit`, Destructive},
		{`git -c sequence.editor=./x.sh rebase -i HEAD~2`, Unknown},
		{`git -c core.pager='sh ./x' log`, Unknown},
		{`git -c pager.log='rm -rf y' log`, Destructive},
		{`git -c Filter.x.Clean='rm -rf y' add .`, Destructive},
		{`git -c filter.lfs.process=./evil status`, Unknown},
		{`git -c diff.x.textconv='rm -rf y' diff`, Destructive},
		{`git -c alias.st='!rm -rf y' st`, Destructive},
		{`git -c credential.helper='!rm -rf y' status`, Destructive},
		{`git -c credential.helper=store status`, Secret},
		{`git -c core.hooksPath=/tmp/h commit -m x`, Unknown},
		{`git -c core.hooksPath=1 commit -m x`, Unknown},
		{`git -c core.sshCommand='rm -rf y' status`, Destructive},
		{`git -c include.path=/tmp/x status`, Unknown},
		{`git --config-env=core.pager=PAGER_CMD log`, Unknown},
		{`git --config-env core.editor=ED commit`, Unknown},
		{`git -c gpg.program=./sign commit -S -m x`, Unknown},
		{`git -c gpg.ssh.defaultKeyCommand='rm -rf y' commit -S -m x`, Destructive},
		{`git --exec-path=/tmp/x status`, Unknown},
		{`git config core.pager 'rm -rf y'`, Destructive},
		{`git config --global core.fsmonitor ./hook.sh`, Unknown},
		{`git config core.hooksPath .githooks`, Unknown},
		{`git config set alias.x '!curl https://example.com'`, Network},
		{`git config --add filter.x.smudge 'rm -rf y'`, Destructive},
		{`git config --file .gitmodules diff.x.command 'rm -rf y'`, Destructive},
		{`git bisect run rm -rf y`, Destructive},
		{`git bisect run ./test.sh`, Unknown},
		{`git grep -O'rm -rf y' foo`, Destructive},
		{`git grep -nO'rm -rf y' foo`, Destructive},
		{`git grep --open-files-in-pager='curl https://example.com' foo`, Network},
		{`git switch --discard-changes main`, Destructive},
	})
	checkOnly(t, map[string][]Class{
		`git -c core.fsmonitor=false status`:        {Read},
		`git -c core.fsmonitor status`:              {Read},
		`git -c pager.log=false log`:                {Read},
		`git -c core.pager=cat log`:                 {Read},
		`git -c color.ui=never diff HEAD`:           {Read},
		`git -c user.name=bot commit -m x`:          {Write},
		`git config --get core.pager`:               {Read},
		`git config core.editor`:                    {Read},
		`git config user.email bot@example.com`:     {Write},
		`git grep -O foo`:                           {Read},
		`git grep -e foo -A 3 -- '*.go'`:            {Read},
		`git bisect start`:                          {Write},
		`git switch -C topic`:                       {Write},
		`git -c core.editor=true commit --amend`:    {Read, Write},
		`git config --global core.editor 'code -w'`: {Write, Persist, Unknown},
	})
}

func TestEnvironmentThatRunsCommands(t *testing.T) {
	checkHas(t, []hasCase{
		{`GIT_EXTERNAL_DIFF='rm -rf y' git diff`, Destructive},
		{`EDITOR='curl https://example.com' git commit`, Network},
		{`VISUAL=./x git commit`, Unknown},
		{`GIT_EDITOR="rm -f a" git commit`, Destructive},
		{`GIT_SSH_COMMAND='rm -rf y' git fetch`, Destructive},
		{`GIT_SSH=./evil git status`, Unknown},
		{`GIT_PAGER='rm -rf y' git log`, Destructive},
		{`PAGER=$CMD git log`, Unknown},
		{`LD_PRELOAD=./x.so ls`, Unknown},
		{`LD_LIBRARY_PATH=. ls`, Unknown},
		{`BASH_ENV=./x.sh bash -c ls`, Unknown},
		{`ENV=./x.sh sh -c ls`, Unknown},
		{`GOFLAGS=-toolexec='rm -rf y' go build`, Destructive},
		{`GOFLAGS="-mod=mod -toolexec=./x" go build`, Unknown},
		{`NODE_OPTIONS='--require ./x.js' npm test`, Unknown},
		{`NODE_OPTIONS=-r./x.js npm test`, Unknown},
		{`NODE_OPTIONS="--import=./x.mjs" npm test`, Unknown},
		{`PYTHONSTARTUP=./x.py python3 -m pytest`, Unknown},
		{`PERL5OPT=-Mx perl -pi -e s/a/b/ f`, Unknown},
		{`GIT_DIR=/tmp/x git status`, Unknown},
		{`GIT_COMMON_DIR=/tmp/x git status`, Unknown},
		{`XDG_CONFIG_HOME=/tmp/x git status`, Unknown},
		{`GIT_CONFIG_PARAMETERS="'core.pager'='rm -rf y'" git log`, Unknown},
		{`PATH=./bin:$PATH ls`, Unknown},
		{`env GIT_PAGER='rm -rf y' git log`, Destructive},
		{`env -i LD_PRELOAD=./x.so ls`, Unknown},
		{`sudo GIT_PAGER='rm -rf y' git log`, Destructive},
		{`sudo LD_PRELOAD=./x.so ls`, Unknown},
		{`cross-env GIT_EXTERNAL_DIFF='rm -rf y' git diff`, Destructive},
		{`export GIT_PAGER='rm -rf y'; git log`, Destructive},
		{`export LD_PRELOAD=./x.so`, Unknown},
		{`declare -x BASH_ENV=./x`, Unknown},
		{`GIT_PAGER='rm -rf y'; git log`, Destructive},
		{`go env -w GOFLAGS=-toolexec=./x`, Unknown},
		{`go env -w CC='rm -rf y'`, Destructive},
		{`env 'BASH_FUNC_ls%%=() { rm -rf y; }' bash -c ls`, Unknown},
	})
	checkOnly(t, map[string][]Class{
		`GIT_PAGER=cat git log -p -1`:                          {Read},
		`GIT_EDITOR=true git commit --amend`:                   {Read, Write},
		`CGO_ENABLED=0 go build ./...`:                         {Build},
		`GOFLAGS=-mod=mod go build ./...`:                      {Build},
		`NODE_OPTIONS=--max-old-space-size=4096 npm test`:      {Verify},
		`CC=clang make`:                                        {Build},
		`LD_PRELOAD= ls`:                                       {Read},
		`export PATH="$HOME/go/bin:$PATH"`:                     {Read},
		`PATH=/usr/local/go/bin:$PATH go test ./...`:           {Verify},
		`env -i PATH=/usr/bin:/bin HOME="$HOME" go test ./...`: {Verify},
		`export NODE_ENV=test`:                                 {Read},
	})
}

func TestBuildToolsThatRunCommands(t *testing.T) {
	checkHas(t, []hasCase{
		{`tar -xf x.tar --to-command='rm -rf y'`, Destructive},
		{`tar --to-com='rm -rf y' -xf x.tar`, Destructive},
		{`tar -cf x.tar --checkpoint=1 --checkpoint-action=exec='rm -rf y' .`, Destructive},
		{`tar -I 'rm -rf y' -xf x.tar`, Destructive},
		{`tar -xI./evil -f x.tar`, Unknown},
		{`tar xIf ./evil x.tar`, Unknown},
		{`tar --use-compress-program='curl https://example.com' -cf x.tar .`, Network},
		{`tar --use-compress-program ./evil -cf x.tar .`, Unknown},
		{`tar -xf x.tar -F ./next.sh`, Unknown},
		{`tar -xf user@example.com:x.tar`, Network},
		{`go build -toolexec 'rm -rf y' ./...`, Destructive},
		{`go build -toolexec=./x ./...`, Unknown},
		{`go test -exec 'rm -rf y' ./...`, Destructive},
		{`go test --exec=./x ./...`, Unknown},
		{`go run -exec ./x .`, Unknown},
		{`go vet -vettool=./x ./...`, Unknown},
		{`go vet -vettool $(which x) ./...`, Unknown},
		{`perl -pi -e 'system("rm -rf y")' f`, Unknown},
		{`perl -pi -e 's/a/b/e' f`, Unknown},
		{`perl -pi -e 's/a/b/;unlink("f")' f`, Unknown},
		{"perl -pi -e 's/a/@{[ `id` ]}/' f", Unknown},
		{`perl -pi -e 's/a/${\ system("id")}/' f`, Unknown},
		{`perl -pi -e 's/(?{ system("id") })a/b/' f`, Unknown},
		{`perl -pi -e 's/a/$ENV{GITHUB_TOKEN}/' f`, Unknown},
		{`perl -pe 's/a/b/;' -le 'system("id")' f`, Unknown},
		{`perl -pi -le 's/a/b/' -e 'unlink "x"' f`, Unknown},
		{`perl -0e 'system("id")'`, Unknown},
		{`perl -pi -0e 'system("id")' f`, Unknown},
		{`perl -F'/x/);system("id");split(/x/' -pi -e 's/a/b/' f`, Unknown},
		{`perl -F'"@{[system("id")]}"' -pi -e 's/a/b/' f`, Unknown},
		{`perl -pie 's/a/b/' f`, Unknown},
		{`perl -MPOSIX -pi -e 's/a/b/' f`, Run}, // the module runs, as use POSIX would
		{`perl -I/tmp -MPOSIX -pi -e 's/a/b/' f`, Unknown},
		{`perl -Ilib -MX -e 1`, Unknown},
		{`perl -pi -e "$CODE" f`, Unknown},
	})
	checkOnly(t, map[string][]Class{
		`tar -xf x.tar`:              {Write},
		`tar -czf dist.tar.gz dist/`: {Write},
		`tar xzf x.tgz -C /tmp/x`:    {Write},
		`tar -xI zstd -f x.tar.zst`:  {Write},
		`tar -tf x.tar`:              {Read},
		`tar --checkpoint=100 --checkpoint-action=dot -xf x.tar`: {Write},
		`go build ./...`: {Build},
		`go build -o bin/app -tags netgo ./cmd/app`:  {Build},
		`go test -run TestX -count=1 ./...`:          {Verify},
		`go vet ./...`:                               {Verify},
		`perl -pi -e 's/a/b/' f`:                     {Write},
		`perl -pi.bak -e 's/\bfoo\b/bar/g' lib/x.pm`: {Write},
		`perl -0777 -pi -e 's/\n+$/\n/' f`:           {Write},
		`perl -pi -e 's{a}{b}g; tr/a-z/A-Z/' f`:      {Write},
		`perl -pi -e 's#a/b#c$1#' f`:                 {Write},
		`perl -lpi -e 's/a/b/' f`:                    {Write},
		`perl -F, -lane 's/a/b/' f`:                  {Read},
		`perl -pe 's/a/b/' f`:                        {Read},
		`perl -v`:                                    {Read},
	})
}

func TestRunnersThatFetchPackages(t *testing.T) {
	checkHas(t, []hasCase{
		{`go run example.com/x/cmd/y@v1.2.3`, Dependency},
		{`go run -exec ./x example.com/y@latest -flag`, Dependency},
		{`npx -p evil tsc`, Dependency},
		{`npx --package=evil tsc -p .`, Dependency},
		{`npx --package evil -- jest`, Dependency},
		{`npm exec -p evil -- tsc`, Dependency},
		{`npx tsc@5.0.0 -p .`, Dependency},
		{`uvx --from evil ruff check`, Dependency},
	})
	checkOnly(t, map[string][]Class{
		`go run ./cmd/x -email=a@example.com`: {Build},
		`go run main.go`:                      {Build},
		`npx tsc -p .`:                        {Build},
		`npx jest`:                            {Verify},
	})
}

func TestNetworkDevicesAndSecretGlobs(t *testing.T) {
	checkHas(t, []hasCase{
		{`cat < /dev/tcp/example.com/80`, Network},
		{`exec 3<>/dev/tcp/example.com/80`, Network},
		{`echo hi > /dev/udp/example.com/53`, Network},
		{`x=$(cat </dev/tcp/$HOST/80)`, Network},
		{`cat .e*`, Secret},
		{`cat .en?`, Secret},
		{`cat .[e]nv`, Secret},
		{`grep -r x .*`, Secret},
		{`cat ~/.ssh/id_*`, Secret},
		{`cat ~/.ssh/*`, Secret},
		{`cat ~/.a*/credentials`, Secret},
		{`cat keys/*.pem`, Secret},
		{`cat *credentials*`, Secret},
		{`cat < .e*`, Secret},
		{`source .e*`, Secret},
	})
	if a := Analyze(`cat < /dev/tcp/example.com/80`, ""); !slices.Contains(a.Hosts, "example.com") {
		t.Errorf("hosts %v", a.Hosts)
	}
	checkOnly(t, map[string][]Class{
		`sed -i 's/.*/x/' f`:  {Write},
		`awk '/.*/' f`:        {Read},
		`jq '.*' f.json`:      {Read},
		`echo '.*'`:           {Read},
		`echo .*`:             {Read},
		`cat ~/.ssh/*.pub`:    {Read},
		`cat ~/.ssh/id_*.pub`: {Read},
		`cat *`:               {Read},
		`cat *.json`:          {Read},
		`wc -l src/**/*.py`:   {Read},
		`cat .eslintrc.*`:     {Read},
		`ls .e*`:              {Read},
		`cat /dev/null`:       {Read},
	})
}

func TestSedScriptsThatRunCommands(t *testing.T) {
	checkHas(t, []hasCase{
		{`sed '/x/e rm -rf y' f`, Destructive},
		{`sed '1e curl https://example.com' f`, Network},
		{`sed -n '$e ./x' f`, Unknown},
		{`sed 'e' f`, Unknown},
		{`sed '/x/ e' f`, Unknown},
		{`sed 's/a/b/e' f`, Unknown},
		{`sed 's/a\/b/c\/d/e' f`, Unknown},
		{`sed 's|a\|b|c|ge' f`, Unknown},
		{`sed 's/a/b/;s/c/d/e' f`, Unknown},
		{`sed -e 's/a/b/' -e '1e rm -rf y' f`, Destructive},
		{`sed --ex='1e rm -rf y' f`, Destructive},
		{`sed --expression '1e rm -rf y' f`, Destructive},
		{`sed --in 's/a/b/' .env`, Secret},
		{`sed --fi=x.sed f`, Unknown},
		{`sed -f x.sed f`, Unknown},
		{`sed -nf x.sed f`, Unknown},
		{`sed -ne '1e rm -rf y' f`, Destructive},
		{`sed "$SCRIPT" f`, Unknown},
		{`sed "s/a/b/$FLAGS" f`, Unknown},
		{`sed 'r .env' f`, Secret},
		{`sed -n "${start},${end}p" f`, Unknown}, // start may be "1e rm -rf y;1"
		{`sed "s|x|$Y|" f`, Unknown},             // Y may be "x|e;#"
		{`sed '1{e rm -rf y
}' f`, Destructive},
	})
	checkOnly(t, map[string][]Class{
		`sed -n '1,80p' f`:               {Read},
		`sed -n '/^func /p' a.go`:        {Read},
		`sed 's/\//x/g' f`:               {Read},
		`sed -E 's/(a|b)+/x/' f`:         {Read},
		`sed -e :a -e '$!N;s/\n//;ta' f`: {Read},
		`sed '/^$/d;s/e/E/' f`:           {Read},
		`sed '1i\
header' f`: {Read},
		`sed '$a footer' f`:                    {Read},
		`sed 'y/abc/xyz/' f`:                   {Read},
		`sed -i.bak -e 's/v1/v2/' a.yaml`:      {Write},
		`sed -ie 's/v1/v2/' a.yaml`:            {Write},
		`sed --in-place=.orig 's/x/y/' a.conf`: {Write},
		`sed 's/e/E/gI;s/x/y/2' f`:             {Read},
		`sed '/start/,/end/{s/a/b/;p}' f`:      {Read},
		`sed --sandbox 's/a/b/' f`:             {Read},
		`sed 's/a/b/w /dev/stdout' f`:          {Read},
	})
}

func TestWritesThatChangeWhatGitRuns(t *testing.T) {
	checkHas(t, []hasCase{
		{`echo 'rm -rf y' > .git/hooks/pre-commit`, Persist},              // issue 20: persistence, held
		{`cp x .git/hooks/post-checkout`, Persist},                        // issue 20: persistence, held
		{`ln -s ../../x.sh .git/hooks/pre-push`, Persist},                 // issue 20: persistence, held
		{`mv hooks .git/hooks`, Persist},                                  // issue 20: persistence, held
		{`chmod +x .git/hooks/pre-commit`, Persist},                       // issue 20: persistence, held
		{`printf '[core]\n\tpager = rm -rf y\n' >> .git/config`, Persist}, // issue 20: persistence, held
		{`sed -i 's/a/b/' .git/config`, Persist},                          // issue 20: persistence, held
		{`tee -a ~/.gitconfig < x`, Persist},                              // issue 20: persistence, held
		{`echo x > ~/.config/git/config`, Persist},                        // issue 20: persistence, held
		{`echo x > .git/config.worktree`, Persist},                        // issue 20: persistence, held
		{`echo x > .git/worktrees/wt/config.worktree`, Persist},           // issue 20: persistence, held
		{`echo x > .git/modules/sub/hooks/pre-commit`, Persist},           // issue 20: persistence, held
		{`echo 'gitdir: /tmp/evil' > sub/.git`, Persist},                  // issue 20: persistence, held
		{`cd sub && echo 'gitdir: /tmp/evil' > .git`, Persist},            // issue 20: persistence, held
		{`git config --file .git/config user.name x`, Persist},            // issue 20: persistence, held
		{`git --git-dir=/tmp/evil status`, Unknown},
		{`GIT_DIR=/tmp/evil git log`, Unknown},
		{`git -c core.hooksPath=1 commit -m x`, Unknown},
		{`git -c gpg.ssh.defaultKeyCommand='curl https://example.com' commit -S -m x`, Network},
		{`git -c gpg.program='rm -rf y' tag -s v1 -m x`, Destructive},
	})
	if a := FileAnalysis(Command{Argv: []string{"files:write", "/workspace/.git/hooks/pre-commit"}, Classes: []Class{Write}, Writes: []string{"/workspace/.git/hooks/pre-commit"}}); !a.Has(Persist) {
		t.Errorf("file API write of a hook: %v, want persist", a.Classes)
	}
	checkOnly(t, map[string][]Class{
		`cat .git/config`:                  {Read},
		`echo x >> .git/info/exclude`:      {Read, Write},
		`echo x > .github/workflows/a.yml`: {Read, Write},
		`echo x > src/config`:              {Read, Write},
		`echo x > docs/hooks/a.md`:         {Read, Write},
	})
}

func TestGoToolAndExtglobSecrets(t *testing.T) {
	checkHas(t, []hasCase{
		{`go tool mytool ./...`, Build},
		{`cat .@(env)`, Secret},
		{`cat .@(x|env)`, Secret},
		{`cat .?(e)nv`, Secret},
		{`cat ~/.@(aws)/credentials`, Secret},
	})
	checkOnly(t, map[string][]Class{
		`go tool`:          {Read},
		`go tool -n cover`: {Read},
		`cat @(a|b).txt`:   {Read},
		`cat !(*.pem)`:     {Read},
	})
}

// Noticed while re-implementing the review's fixes: more places where a
// line hands a program a command or sets a watched variable unseen.
func TestBuiltinsThatRunCommandsOrSetVariables(t *testing.T) {
	checkHas(t, []hasCase{
		{`export "GIT_PAGER=rm -rf y"; git log`, Destructive},
		{`export $N=x`, Unknown},
		{`export "$ASSIGNMENT"`, Unknown},
		{`env "$N=x" git log`, Unknown},
		{`read -r GIT_PAGER < f; export GIT_PAGER; git log`, Unknown},
		{`printf -v LD_PRELOAD %s ./x.so`, Unknown},
		{`mapfile -C 'rm -rf y' -c 1 arr < f`, Destructive},
		{`compgen -C 'rm -rf y' x`, Destructive},
		{`enable -f ./x.so x`, Unknown},
		{`dc -e '!rm -rf y'`, Unknown},
		{`sort --compress-program='rm -rf y' f`, Destructive},
		{`man -P 'rm -rf y' ls`, Destructive},
		{`zip -T -TT 'rm -rf y' a.zip f`, Destructive},
		{`ldd ./bin/app`, Unknown},
		{`PATH=:$PATH ls`, Unknown},
		{`PATH=$PATH: ls`, Unknown},
		{`PATH+=:./bin; ls`, Unknown},
		{`go test -bench . -benchmem -exec ./x ./...`, Unknown},
		{`awk -i inplace 'BEGIN{system("rm -rf y")}' f`, Unknown},
		{`gawk -e 'BEGIN{system("rm -rf y")}' f`, Unknown},
		{`awk 'BEGIN{c="rm -rf y"; print | c}'`, Unknown},
		{`gawk 'BEGIN{print |& "rm -rf y"}'`, Unknown},
		{`gawk -l ./x.so 'BEGIN{}'`, Unknown},
		{`gawk -i ./lib.awk 'BEGIN{}'`, Unknown},
		{`awk -fprog.awk f`, Unknown},
		{`awk "$PROG" f`, Unknown},
	})
	checkOnly(t, map[string][]Class{
		`read -r line < f`:                    {Read},
		`printf -v out '%s' x`:                {Read},
		`printf '%s\n' x`:                     {Read},
		`mapfile -t lines < f`:                {Read},
		`man ls`:                              {Read},
		`sort -u f`:                           {Read},
		`ldd /usr/bin/git`:                    {Read},
		`PATH+=:/usr/local/go/bin`:            {Read},
		`export "NODE_ENV=test"`:              {Read},
		`zip -r /tmp/a.zip src`:               {Write},
		`awk -F, '{print $2}' f`:              {Read},
		`awk -v n=3 'NR<n' f`:                 {Read},
		`awk -i inplace '{gsub(/a/,"b")}1' f`: {Write},
	})
}

// Noticed too: other places a command is handed over (make's variables,
// npm's configuration flags, the go linker) and files whose content runs
// when a shell or an interpreter starts.
func TestMoreCommandsHandedOver(t *testing.T) {
	checkHas(t, []hasCase{
		{`make SHELL=./evil`, Unknown},
		{`make CC='rm -rf y'`, Destructive},
		{`make LD_PRELOAD=./x.so test`, Unknown},
		{`make --eval='x:=$(shell rm -rf y)'`, Unknown},
		{`npm test --script-shell='rm -rf y'`, Destructive},
		{`npm run build --script-shell ./evil`, Unknown},
		{`npm test --node-options='--require ./x.js'`, Unknown},
		{`npm test --userconfig ./npmrc`, Unknown},
		{`go build -ldflags='-linkmode=external -extld=./evil' .`, Unknown},
		{`GOFLAGS=-ldflags=-extld=./evil go build`, Unknown},
		{`GOTOOLCHAIN=go1.99.0 go build`, Unknown},
		{`tar --checkpoint --to-command='rm -rf y' -xf x.tar`, Destructive},
		{`echo 'rm -rf y' >> ~/.bashrc`, Persist},                                   // issue 20: persistence, held
		{`cp x ~/.profile`, Persist},                                                // issue 20: persistence, held
		{`echo /tmp/x.so > /etc/ld.so.preload`, Persist},                            // issue 20: persistence, held
		{`echo 'import os' > ~/.local/lib/python3.12/site-packages/x.pth`, Persist}, // issue 20: persistence, held
	})
	checkOnly(t, map[string][]Class{
		`make test CI=1`:                          {Verify},
		`make CC=clang`:                           {Build},
		`npm test --silent`:                       {Verify},
		`go build -ldflags='-s -w -X main.v=1' .`: {Build},
		`GOTOOLCHAIN=local go build`:              {Build},
		`tar --checkpoint -xf x.tar`:              {Write},
		`echo x > docs/.bashrc.md`:                {Read, Write},
	})
}
