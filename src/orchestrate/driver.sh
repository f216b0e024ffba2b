# fugue pipeline driver (see fugue(1), ORCHESTRATION TOOLS). fugue replaces each placeholder
# below with a quoted shell word, and runs this file with the pane's shell.
#
# Each step is a file in a private directory, read into a variable and run here with `eval`, so
# `cd`, `export`, `set` and functions carry over to the next step, and the terminal stays the
# step's stdin. The shell runs with $0 = fugue, so its error messages read `fugue: 1: ...`.
# The step's $? goes to fugue through a FIFO that only fugue reads (fd 4, closed while steps run),
# never through the terminal, so no output can fake it and no echo can show it. After each step an
# OSC sequence with a secret nonce, invisible in the text view, marks on the terminal where the
# step's output ends. Names start with __fugue_ so that steps do not clobber them by accident.
__fugue_dir=@DIR@
__fugue_count=@COUNT@
__fugue_nonce=@NONCE@
__fugue_stop_on_error=@STOP_ON_ERROR@
__fugue_check=@CHECK@
__fugue_sh=@SH@
__fugue_keep=@KEEP@
__fugue_shell=@SHELL@
exec 4>"$__fugue_dir/status" || exit 125
# Ctrl-C (or fugue's timeout) interrupts the running step, not this loop: a caught signal is
# reset to the default in the step's commands. While a step runs, `step` (sourced) sets the trap
# to `return`, which ends the step even when the shell itself is blocked in a builtin such as
# `read` (bash and zsh restart it after a trap that returns normally).
trap : INT
__fugue_i=1
__fugue_rc=0
while [ "$__fugue_i" -le "$__fugue_count" ] && [ ! -e "$__fugue_dir/stop" ]; do
    printf 'b %s\n' "$__fugue_i" >&4
    # `read` rather than `cat`: a step may have changed PATH.
    __fugue_step=
    while IFS= read -r __fugue_line || [ -n "$__fugue_line" ]; do
        __fugue_step="$__fugue_step$__fugue_line
"
    done <"$__fugue_dir/$__fugue_i"
    # Most shells exit on a syntax error in eval; check first so a typo fails one step.
    if [ "$__fugue_check" = 1 ] && ! "$__fugue_sh" -n -c "$__fugue_step" fugue; then
        __fugue_rc=2
    else
        . "$__fugue_dir/step" 4>&-
        __fugue_rc=$?
    fi
    printf '\033]7770;%s;%s\007' "$__fugue_nonce" "$__fugue_i" >/dev/tty
    # The directory the step left the shell in, for the answer's cwd; a path holding a newline
    # cannot travel as one line and is left out.
    case ${PWD-} in
    *'
'* | '') ;;
    *) printf 'c %s\n' "$PWD" >&4 ;;
    esac
    printf 'e %s %s\n' "$__fugue_i" "$__fugue_rc" >&4
    if [ "$__fugue_rc" -ne 0 ] && [ "$__fugue_stop_on_error" = 1 ]; then
        break
    fi
    __fugue_i=$((__fugue_i + 1))
done
# fugue removes the directory once it reads this line: nothing below may use it.
printf 'x %s\n' "$__fugue_rc" >&4
exec 4>&-
# The INT trap stays to the end: exec resets it for the next program, and a late interrupt must
# not end this shell between the loop and the exec.
if [ "$__fugue_keep" = 1 ]; then
    exec "$__fugue_shell" -i
fi
exit "$__fugue_rc"
