# Phase timing shared by .ci/run and scripts/test (sourced, not run).
#
#   phase NAME     closes the phase before (if any), opens NAME, prints its header
#   phase_end      closes the open phase
#   phase_table    the phases with their seconds, and the total
#
# The times go to $PAGELAB_PHASES (one "name<TAB>seconds" line each), so that
# .ci/run's phases (install, fmt, clippy) and scripts/test's land in one table.
# A line with a third field, "beside", ran beside the others (the VM test): it
# is listed, and left out of the total, which is the wall clock.
: "${PAGELAB_PHASES:=target/tmp/phases.tsv}"
export PAGELAB_PHASES
mkdir -p "$(dirname "$PAGELAB_PHASES")"
_phase_name=
_phase_t0=

_phase_now() { date +%s.%N; }

phase_end() {
  if [ -n "$_phase_name" ]; then
    awk -v n="$_phase_name" -v a="$_phase_t0" -v b="$(_phase_now)" 'BEGIN { printf "%s\t%.1f\n", n, b - a }' \
      >> "$PAGELAB_PHASES"
    _phase_name=
  fi
}

phase() {
  phase_end
  _phase_name=$1
  _phase_t0=$(_phase_now)
  printf '\n== %s ==\n' "$1"
}

phase_table() {
  phase_end
  [ -s "$PAGELAB_PHASES" ] || return 0
  echo
  echo "phases (seconds, wall clock):"
  awk -F'\t' '$3 == "beside" { printf "  %-52s %8.1f  (not in the total)\n", $1, $2; next }
    { printf "  %-52s %8.1f\n", $1, $2; t += $2 }
    END { printf "  %-52s %8.1f  (%.1f min)\n", "total", t, t / 60 }' "$PAGELAB_PHASES"
}
