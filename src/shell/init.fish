# fugue shell integration for fish (see fugue(1), LIVE SHELLS). fugue starts fish with
# `--init-command` sourcing this file, which fish runs after config.fish and conf.d; it adds
# handlers for fish's own events, which run beside the user's.
#
# Before each prompt the handler writes a record to a FIFO that only fugue reads, opened by path
# so that no command inherits it: a nonce, the id of the last fugue_exec, the status and `$PWD`.
# It also prints OSC 133/7 marks tagged with the id and the nonce. The nonce comes from a file
# that is deleted here, never from the environment.
set -g __fugue_dir @DIR@
read -g __fugue_nonce <$__fugue_dir/nonce 2>/dev/null
command rm -f -- $__fugue_dir/nonce
set -g __fugue_p 0
set -g __fugue_k 0
set -g __fugue_s 0
function __fugue_postexec --on-event fish_postexec
    set -g __fugue_s $status
end
function __fugue_preexec --on-event fish_preexec
    printf '\e]133;C\a' 2>/dev/null >/dev/tty
end
function __fugue_prompt --on-event fish_prompt
    set -g __fugue_k (math $__fugue_k + 1)
    printf '\e]133;D;%s;fugue=%s.%s\a\e]7;file://%s%s\a\e]133;A\a' $__fugue_s $__fugue_k \
        $__fugue_nonce $hostname $PWD 2>/dev/null >/dev/tty
    printf '%s P %s %s %s %s\0' $__fugue_nonce $__fugue_k $__fugue_p $__fugue_s $PWD \
        2>/dev/null >$__fugue_dir/r
end
# fugue_exec types ` __fugue_b ID; eval $__fugue_c`: the command never passes through the
# terminal, so quoting and newlines do not matter. It returns the status it found, so that the
# command sees the last one's `$status`.
function __fugue_b
    set -l s $status
    set -g __fugue_p $argv[1]
    set -g __fugue_c ''
    read -z -g __fugue_c <$__fugue_dir/c$argv[1]
    printf '\e]133;C;fugue=x%s.%s\a' $argv[1] $__fugue_nonce 2>/dev/null >/dev/tty
    return $s
end
# The prompt ends with the mark that says it is drawn: fugue types only after it, so what the
# terminal prints next is the echo of what it typed. The user's prompt (or fish's own) runs first.
functions -q fish_prompt; and functions --copy fish_prompt __fugue_user_prompt
function fish_prompt
    functions -q __fugue_user_prompt; and __fugue_user_prompt
    printf '\e]133;B\a'
end
