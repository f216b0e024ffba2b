# fugue shell integration for dash, ksh93, mksh and other POSIX shells (see fugue(1), LIVE
# SHELLS). fugue points ENV here; this file reads the user's own ENV file (or the shell's default
# one), restores ENV, and puts hooks in front of PS1 and behind it. These shells have no hook
# that runs before a command, so only the prompt reports.
#
# The hooks write a record to a FIFO that only fugue reads, opened by path so that no command
# inherits it (a nonce, the prompt's number, the id of the last fugue_exec, `$?` and `$PWD`), and
# prints OSC 133/7 marks tagged with the number and the nonce straight to the terminal. ksh93 and
# mksh run them in the shell itself (`${ ...;}`); dash only has `$(...)`, a subshell, so the prompt's
# number is counted by an arithmetic expansion inside PS1. The nonce comes from a file deleted here.
__fugue_dir=@DIR@
IFS= read -r __fugue_nonce <"$__fugue_dir/nonce"
command rm -f -- "$__fugue_dir/nonce"
__fugue_p=0
__fugue_k=0
__fugue_s=0
# ESC and BEL, written here by fugue as they are (no subshell needed to make them).
__fugue_e='@ESC@'
__fugue_g='@BEL@'
__fugue_a="$__fugue_e]133;A$__fugue_g"
@RESTORE_ENV@
if [ -n "$__fugue_env" ] && [ -r "$__fugue_env" ]; then
    . "$__fugue_env"
fi
unset __fugue_env
@OUT@
# First in PS1: mark where the command's output ended ($1 is its status).
__fugue_mark() {
    __fugue_tty "$__fugue_e]133;D;$1;fugue=$__fugue_k.$__fugue_nonce$__fugue_g"\
"$__fugue_e]7;file://${HOSTNAME-}$PWD$__fugue_g"
}
# Last in PS1, after the user's own substitutions: report. mksh takes the status of the last
# `${ ...;}` in PS1 as the `$?` the next command sees, so each hook returns the status it found.
# Only its low byte: ksh93 (which keeps `$?` itself) reports a death by signal N as 256+N, and a
# function in PS1 that returns that makes it start the prompt over, without end.
__fugue_report() {
    __fugue_t=$?
    __fugue_rec "$__fugue_nonce P $__fugue_k $__fugue_p $1 $PWD"
    return $((__fugue_t & 255))
}
__fugue_next() {
    __fugue_s=$1
    __fugue_k=$((__fugue_k + 1))
    __fugue_mark "$1"
    __fugue_tty "$__fugue_a"
    return $(($1 & 255))
}
# fugue_exec types ` __fugue_b ID;eval "$__fugue_c"`: the command never passes through the
# terminal. The file is read line by line with builtins only (a command may have changed PATH).
# It returns the status it found, so that the command sees the last one's `$?`.
__fugue_b() {
    __fugue_t=$?
    __fugue_p=$1
    __fugue_c=
    while IFS= read -r __fugue_l || [ -n "$__fugue_l" ]; do
        __fugue_c="$__fugue_c$__fugue_l
"
    done <"$__fugue_dir/c$1"
    __fugue_tty "$__fugue_e]133;C;fugue=x$1.$__fugue_nonce$__fugue_g"
    return "$__fugue_t"
}
# Last of all, the mark that says the prompt is drawn: fugue types only after it, so what the
# terminal prints next is the echo of what it typed.
PS1=@PS1_HEAD@"${PS1-\$ }"@PS1_TAIL@"$__fugue_e]133;B$__fugue_g"
