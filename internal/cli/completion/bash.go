package completion

// bashScript is the bash completion; @VERBS@ becomes the verb names. The
// words it offers go through compgen -W, which splits them on spaces: a
// template named with one cannot be offered (names are [a-z0-9._-]).
const bashScript = `# bash completion for airlock ('airlock completion bash')
_airlock_help_flags() {
	# the flags a command's --help lists: "  -name TYPE" or "  -name"
	"$@" --help 2>/dev/null | sed -n 's/^  -\([a-zA-Z0-9-]*\).*/--\1/p'
}
_airlock_value_flag() {
	# whether flag $1 of command "${@:2}" takes a value (its help names a type)
	local f=${1#--}; f=${f#-}
	"${@:2}" --help 2>/dev/null | grep -Eq "^  -$f [a-zA-Z]"
}
_airlock() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local bin=${COMP_WORDS[0]} i
	COMPREPLY=()
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} == -- ]]; then
			COMPREPLY=($(compgen -f -- "$cur"))
			return
		fi
	done
	if ((COMP_CWORD == 1)); then
		COMPREPLY=($(compgen -W "@VERBS@ help" -- "$cur"))
		return
	fi
	local verb=${COMP_WORDS[1]} cmd=("$bin" "${COMP_WORDS[1]}")
	local subs
	subs=$("$bin" "$verb" --help 2>/dev/null | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
	if [[ -n $subs ]]; then
		if ((COMP_CWORD == 2)); then
			COMPREPLY=($(compgen -W "$subs" -- "$cur"))
			return
		fi
		cmd+=("${COMP_WORDS[2]}")
	fi
	case $prev in
	--template | -template)
		COMPREPLY=($(compgen -W "$("$bin" template ls -q 2>/dev/null)" -- "$cur"))
		return
		;;
	--backend | -backend | --template-backend | -template-backend)
		COMPREPLY=($(compgen -W "native gvisor" -- "$cur"))
		return
		;;
	-*)
		if _airlock_value_flag "$prev" "${cmd[@]}"; then
			COMPREPLY=($(compgen -f -- "$cur"))
			return
		fi
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_airlock_help_flags "${cmd[@]}")" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _airlock airlock
`
