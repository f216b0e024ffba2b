# fugue shell integration for zsh (see fugue(1), LIVE SHELLS). fugue points ZDOTDIR at the
# directory holding this file as `.zshenv`; it restores ZDOTDIR first, so zsh reads the user's
# .zshenv here and then .zshrc (and the rest) from the user's own ZDOTDIR as usual. It adds
# functions in front of and behind precmd_functions, and one at the end of preexec_functions.
#
# After each command the precmd hook writes a record to a FIFO that only fugue reads, opened by
# path so that no command inherits it: a nonce, the id of the last fugue_exec, `$?` and `$PWD`. It
# also prints OSC 133/7 marks tagged with the id and the nonce. The nonce comes from a file that
# is deleted here, never from the environment.
__fugue_dir=@DIR@
@RESTORE_ZDOTDIR@
{ IFS= read -r __fugue_nonce <"$__fugue_dir/nonce"; } 2>/dev/null
command rm -f -- "$__fugue_dir/nonce"
typeset -g __fugue_p=0 __fugue_k=0 __fugue_s=0
# The first precmd function: keep `$?` and mark where the command's output ends.
__fugue_precmd() {
    __fugue_s=$?
    (( __fugue_k++ ))
    printf '\033]133;D;%s;fugue=%s.%s\007\033]7;file://%s%s\007\033]133;A\007' "$__fugue_s" \
        "$__fugue_k" "$__fugue_nonce" "$HOST" "$PWD" 2>/dev/null >/dev/tty
    # The report goes last, after hooks the user's .zshrc added behind this one.
    precmd_functions=(${precmd_functions:#__fugue_report} __fugue_report)
    return $__fugue_s
}
__fugue_report() {
    printf '%s P %s %s %s %s\0' "$__fugue_nonce" "$__fugue_k" "$__fugue_p" "$__fugue_s" "$PWD" \
        2>/dev/null >"$__fugue_dir/r"
    # The prompt ends with the mark that says it is drawn (fugue types only after it); themes that
    # rebuild PS1 in their own precmd drop it, so it is put back every prompt.
    [[ $PS1 == *$'\e]133;B\a%}' ]] || PS1=$PS1$'%{\e]133;B\a%}'
}
__fugue_preexec() {
    printf '\033]133;C\007' 2>/dev/null >/dev/tty
}
# fugue_exec types ` __fugue_b ID;eval "$__fugue_c"`: the command never passes through the
# terminal, so quoting, newlines and history expansion do not matter. It returns the status it
# found, so that the command sees the last one's `$?`.
__fugue_b() {
    local s=$?
    __fugue_p=$1
    __fugue_c=
    { IFS= read -r -d '' __fugue_c || :; } <"$__fugue_dir/c$1"
    printf '\033]133;C;fugue=x%s.%s\007' "$1" "$__fugue_nonce" 2>/dev/null >/dev/tty
    return $s
}
typeset -ga precmd_functions preexec_functions
precmd_functions=(__fugue_precmd $precmd_functions __fugue_report)
preexec_functions+=(__fugue_preexec)
if [[ -r ${ZDOTDIR:-$HOME}/.zshenv ]]; then
    . "${ZDOTDIR:-$HOME}/.zshenv"
fi
