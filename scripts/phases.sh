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

# The budgets (scripts/phase-budgets.tsv): "name<TAB>seconds", # comments.
_phase_budgets=$(dirname "${BASH_SOURCE[0]}")/phase-budgets.tsv

phase_table() {
  phase_end
  [ -s "$PAGELAB_PHASES" ] || return 0
  echo
  echo "phases (seconds, wall clock; the budget beside, scripts/phase-budgets.tsv):"
  awk -F'\t' '
    FNR == NR { if ($0 !~ /^#/ && NF >= 2) { nb++; bn[nb] = $1; bs[nb] = $2 } next }
    function budget(name,   i, p) {
      for (i = 1; i <= nb; i++) {
        p = bn[i]
        if (p ~ /\*$/) { p = substr(p, 1, length(p) - 1); if (substr(name, 1, length(p)) == p) return bs[i] }
        else if (p == name) return bs[i]
      }
      return ""
    }
    function line(name, s, note,   b, over) {
      b = budget(name)
      over = (b != "" && s > b + 0) ? sprintf("  OVER by %.0f", s - b) : ""
      printf "  %-52s %8.1f %8s%s%s\n", name, s, (b == "" ? "-" : b), note, over
    }
    $3 == "beside" { line($1, $2, "  (beside, not in the total)"); next }
    { line($1, $2, ""); t += $2; if (budget($1) != "") tb += budget($1) }
    END { printf "  %-52s %8.1f %8.0f  (%.1f min; the budgets of these phases add up to %.1f min)\n", "total", t, tb, t / 60, tb / 60 }
  ' "$_phase_budgets" "$PAGELAB_PHASES"
}
