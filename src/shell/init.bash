# fugue shell integration for bash (see fugue(1), LIVE SHELLS). fugue starts an interactive bash
# with `--init-file` pointing here, so bash has already read /etc/bash.bashrc; this file reads
# ~/.bashrc as bash would, then adds PROMPT_COMMAND elements before and after the user's own.
#
# After each command the hook writes a record to a FIFO that only fugue reads, opened by path so
# that no command inherits it: a nonce, the id of the last fugue_exec, `$?` and `$PWD`. It also
# prints OSC 133/7 marks (tagged with the id and the nonce) that tell fugue where the command's
# output ends. The nonce comes from a file that is deleted here, never from the environment.
__fugue_dir=@DIR@
{ IFS= read -r __fugue_nonce <"$__fugue_dir/nonce"; } 2>/dev/null
command rm -f -- "$__fugue_dir/nonce"
__fugue_p=0
__fugue_k=0
__fugue_s=0
if [ -r ~/.bashrc ]; then
    . ~/.bashrc
fi
# The first PROMPT_COMMAND element: keep `$?` and mark where the command's output ends.
__fugue_prompt() {
    __fugue_s=$?
    __fugue_k=$((__fugue_k + 1))
    printf '\033]133;D;%s;fugue=%s.%s\007\033]7;file://%s%s\007' "$__fugue_s" "$__fugue_k" \
        "$__fugue_nonce" "$HOSTNAME" "$PWD" 2>/dev/null >/dev/tty
    return "$__fugue_s"
}
# The last element: report once the user's own hooks have run, so the shell is at its prompt.
__fugue_report() {
    printf '%s P %s %s %s %s\0' "$__fugue_nonce" "$__fugue_k" "$__fugue_p" "$__fugue_s" "$PWD" \
        2>/dev/null >"$__fugue_dir/r"
    # Themes that rebuild PS1 drop the marks: put them back every prompt.
    case $PS1 in
    *'133;A'*) ;;
    *) PS1='\[\e]133;A\a\]'$PS1'\[\e]133;B\a\]' ;;
    esac
    return "$__fugue_s"
}
# fugue_exec types ` __fugue_b ID;eval "$__fugue_c"`: the command itself never passes through the
# terminal, so quoting, newlines and history expansion do not matter. It returns the status it
# found, so that the command sees the last one's `$?`.
__fugue_b() {
    local s=$?
    __fugue_p=$1
    __fugue_c=
    { IFS= read -r -d '' __fugue_c || :; } <"$__fugue_dir/c$1"
    printf '\033]133;C;fugue=x%s.%s\007' "$1" "$__fugue_nonce" 2>/dev/null >/dev/tty
    return "$s"
}
if [ "${#PROMPT_COMMAND[@]}" -gt 1 ]; then
    PROMPT_COMMAND=(__fugue_prompt "${PROMPT_COMMAND[@]}" __fugue_report)
else
    # Newlines, not `;`: a user's string may end in `;` (pyenv-virtualenv's does) or a comment.
    __fugue_nl=$'\n'
    PROMPT_COMMAND="__fugue_prompt$__fugue_nl${PROMPT_COMMAND:+$PROMPT_COMMAND$__fugue_nl}__fugue_report"
    unset __fugue_nl
fi
# PS0 is printed as it is, not by readline: no \[ \] around the mark.
PS0='\e]133;C\a'${PS0-}
