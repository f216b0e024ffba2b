# fugue pipeline step (see driver.sh), sourced by the driver once per step. An interrupt returns
# from this file, which ends the step in every shell: bash and zsh restart a `read` after a trap
# that returns normally, so `trap :` alone would leave the step waiting. The trap is set back to
# `:` before the return, so an interrupt after the step cannot return from the driver itself.
trap 'return 130' INT
eval "$__fugue_step"
__fugue_rc=$?
trap : INT
return "$__fugue_rc"
