#!/usr/bin/env bash
# The side-by-side table of bench/kueue_side_by_side.sh, from the files it
# keeps per side (figures, summary.yaml, wlStates.csv):
#
#   bench/kueue_report.sh GENERATOR_CONFIG DIR SIDE...
#
# Mean time to admission per class is the runner's own summary
# (averageTimeToAdmissionMs, over every Workload of the class); p90 is taken
# from wlStates.csv over the same Workloads. Admitted counts Workloads with a
# time to admission or to finish (a Workload first seen already admitted has
# 0 ms to admission); admissions/s is that count over the drain time.
set -euo pipefail
config=$1 dir=$2
shift 2
sides=("$@")

# Lower bound on the drain time from the generator config: per cohort, its
# demand (sum over Workloads of request x runtime) over its nominal quota
# (every ClusterQueue of a cohort can borrow the others' quota); and the last
# Workload's creation plus its runtime. Reads the generator's schema
# (cohorts > queuesSets > workloadsSets > workloads), one key per line.
bound_of() {  # generator config -> "demand_s create_s"
  awk '
  function qty(x) { gsub(/"/, "", x); return x ~ /m$/ ? x / 1000 : x + 0 }  # "500m", "20", 20
  function flush_wl() { if (wreq != "") { wsum += wreq * wpods * wrt; wmaxrt = (wrt > wmaxrt ? wrt : wmaxrt) } wreq = ""; wrt = 0; wpods = 1 }
  function flush_ws() { flush_wl(); if (wscount != "") { qdemand += wscount * wsum; last = wscount * wsint + wmaxrt; lastmax = (last > lastmax ? last : lastmax) } wscount = ""; wsum = 0; wsint = 0; wmaxrt = 0 }
  function flush_qs() { flush_ws(); if (qcount != "") { cdemand += qcount * qdemand; cquota += qcount * qnom } qcount = ""; qdemand = 0; qnom = 0 }
  function flush_c() { flush_qs(); if (cquota > 0) { b = cdemand / cquota; best = (b > best ? b : best) } cdemand = 0; cquota = 0 }
  { sub(/#.*/, "") }
  /^[[:space:]]*$/ { next }
  { ind = match($0, /[^ -]/) - 1; line = $0; sub(/^[ -]*/, "", line); split(line, kv, /:[[:space:]]*/); k = kv[1]; v = kv[2] }
  k == "cohorts" { next }
  k == "queuesSets" { flush_qs(); inq = 1; next }
  k == "workloadsSets" { flush_ws(); next }
  k == "workloads" { next }
  k == "className" && ind <= 4 { flush_c(); next }
  k == "className" && ind <= 6 { flush_qs(); next }
  k == "className" { flush_wl(); next }
  k == "count" && ind <= 4 { next }
  k == "count" && ind <= 6 { qcount = v; next }
  k == "count" { flush_ws(); wscount = v; next }
  k == "nominalQuota" { qnom = qty(v); next }
  k == "creationIntervalMs" { wsint = v; next }
  k == "runtimeMs" { wrt = v; next }
  k == "request" { wreq = qty(v); next }
  k == "podCount" { wpods = v; next }
  END { flush_c(); printf "%.0f %.0f\n", best / 1000, lastmax / 1000 }' "$1"
}
# Per workload class, from the same schema: "class runtimeMs count
# intervalMs" (the last two of its workloads set).
classes_of() {
  awk '{ sub(/#.*/, "") } { line = $0; sub(/^[ -]*/, "", line); split(line, kv, /:[[:space:]]*/) }
       kv[1] == "count" { n = kv[2] } kv[1] == "creationIntervalMs" { iv = kv[2] }
       kv[1] == "className" { c = kv[2] } kv[1] == "runtimeMs" { print c, kv[2], n, iv }' "$1"
}
# The seconds from the last Workload's finish to the recorder's end, which
# comes when the ClusterQueues' statuses show nothing pending or reserving:
# how late the controller's queue statuses were at the end. A Workload's
# finish is its creation plus its ms to finish; the runner does not record
# creation times, so the creation of the k-th of n Workloads of a set is
# taken as the generator's start plus k/n of the time to that set's "End
# generation" line in runner.log (the generator creates each set's Workloads
# one by one at its interval, slower when the API server is busy).
status_tail() {  # side dir
  local d=$2
  awk -v gs="$(get "$1" gen_start)" -v re="$(get "$1" rec_end)" '
    function epoch(t,   y, m, dd, a, yy, mm, days, sec) {  # RFC 3339, UTC
      y = substr(t, 1, 4) + 0; m = substr(t, 6, 2) + 0; dd = substr(t, 9, 2) + 0
      a = (m <= 2); yy = y - a; mm = m + 12 * a - 3
      days = 365 * yy + int(yy / 4) - int(yy / 100) + int(yy / 400) + int((153 * mm + 2) / 5) + dd
      sec = substr(t, 12, 2) * 3600 + substr(t, 15, 2) * 60 + substr(t, 18)
      sub(/Z$/, "", sec)
      return days * 86400 + sec
    }
    function ms(s) { if (s ~ /ms$/) return s + 0; if (s ~ /s$/) return s * 1000; return -1 }
    FNR == 1 { fi++ }
    fi == 1 { cnt[$1] = $3; iv[$1] = $4; next }
    fi == 2 {
      if ($0 !~ /End generation/ || $0 !~ /generate workload group/) next
      ns = $0; sub(/.*"namespace": "/, "", ns); sub(/".*/, "", ns)
      dl = $0; sub(/.*"delay": "/, "", dl); sub(/".*/, "", dl)
      split($0, f, "\t"); ends[ns "|" ms(dl)] = epoch(f[1]); next
    }
    FNR > 1 && $6 > 0 {
      # The name is CLASS-SET-K-I (a class name may have dashes of its own).
      c = $2; np = split($4, p, "-"); k = $3 "|" iv[c]
      if (!(k in ends) || cnt[c] <= 0) next
      fin = g + (p[np - 1] + 1) / cnt[c] * (ends[k] - g) + $6 / 1000
      if (fin > last) last = fin
    }
    BEGIN { g = epoch(gs); r = epoch(re) }
    END { if (last > 0 && gs != "" && re != "") printf "%.1f s\n", r - last; else print "-" }' \
    FS=' ' <(classes_of "$cfg") FS='\t' "$d/runner.log" FS=, "$d/wlStates.csv" 2>/dev/null || echo "-"
}
read -r demand_s create_s <<<"$(bound_of "$config")"
lb=$((demand_s > create_s ? demand_s : create_s))

get() { awk -F= -v k="$2" '$1 == k { print $2 }' "$dir/$1/figures" 2>/dev/null; }
secs() { [[ -n $1 ]] && date -u -d "$1" +%s.%N 2>/dev/null || echo ""; }

# Generator start to the recorder's end, from the runner's log (else the
# script's wall time).
drain_secs() {
  local gs re
  gs=$(secs "$(get "$1" gen_start)") re=$(secs "$(get "$1" rec_end)")
  if [[ -n $gs && -n $re ]]; then
    awk -v a="$gs" -v b="$re" 'BEGIN { printf "%.1f", b - a }'
  else
    awk -v w="$(get "$1" wall_ms)" 'BEGIN { printf "%.1f", w / 1000 }'
  fi
}

declare -A row
labels=()
add() {  # label side value
  [[ -v "row[$1]" ]] || labels+=("$1")
  row[$1|$2]=$3
  row[$1]=1
}
classes=()
for s in "${sides[@]}"; do
  d=$dir/$s
  [[ -f $d/figures ]] || continue
  drain=$(drain_secs "$s")
  read -r total admitted < <(awk -F, 'NR > 1 { n++; if ($5 > 0 || $6 > 0) a++ } END { print n + 0, a + 0 }' "$d/wlStates.csv" 2>/dev/null || echo "0 0")
  add "Workloads admitted / recorded" "$s" "$admitted / $total"
  add "drain time (generator start to recorder end)" "$s" "${drain} s"
  # A side with its own config (the floor sides: no quota bound) has its own bound.
  cfg=$config slb=$lb
  if [[ -f $d/generator.yaml ]]; then
    cfg=$d/generator.yaml
    read -r sd sc <<<"$(bound_of "$cfg")"
    slb=$((sd > sc ? sd : sc))
  fi
  add "drain time / lower bound" "$s" "$(awk -v a="$drain" -v b="$slb" 'BEGIN { printf "%.2f (of %d s)", (b > 0 ? a / b : 0), b }')"
  if [[ $s != *-floor && -f $dir/$s-floor/figures ]]; then
    add "drain time / its floor side's" "$s" "$(awk -v a="$drain" -v b="$(drain_secs "$s-floor")" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
  fi
  add "admissions per second" "$s" "$(awk -v a="$admitted" -v t="$drain" 'BEGIN { printf "%.1f", (t > 0 ? a / t : 0) }')"
  # Per class: mean from the summary, p90 from the CSV.
  while read -r cls mean; do
    [[ " ${classes[*]} " == *" $cls "* ]] || classes+=("$cls")
    p90=$(awk -F, -v c="$cls" 'NR > 1 && $2 == c { print $5 }' "$d/wlStates.csv" | sort -n |
      awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else { i = int(NR * 0.9 + 0.999999); if (i < 1) i = 1; print v[i] } }')
    add "$cls: mean time to admission" "$s" "$(awk -v m="$mean" 'BEGIN { printf "%.1f s", m / 1000 }')"
    add "$cls: p90 time to admission" "$s" "$(awk -v m="$p90" 'BEGIN { printf "%.1f s", m / 1000 }')"
  done < <(awk '/^workloadClasses:/ { w = 1; next } /^[^ ]/ { w = 0 } w && /^  [^ ]/ { c = $1; sub(/:$/, "", c) }
                w && /averageTimeToAdmissionMs:/ { print c, $2 }' "$d/summary.yaml" 2>/dev/null | sort)
  # Kueue's checker's usage per ClusterQueue class: CPU used over nominal
  # quota times the class's monitored time.
  while read -r cls used quota first last; do
    el=$(awk -v a="$(secs "$first")" -v b="$(secs "$last")" 'BEGIN { printf "%d", (b - a) * 1000 }')
    add "$cls: quota usage (Kueue's checker)" "$s" "$(awk -v u="$used" -v q="$quota" -v e="$el" 'BEGIN { printf "%.1f%%", (q > 0 && e > 0 ? u * 100 / (q * e) : 0) }')"
  done < <(awk '/^clusterQueueClasses:/ { w = 1; next } /^[^ ]/ { w = 0 } w && /^  [^ ]/ { if (c != "") print c, u, q, f, l; c = $1; sub(/:$/, "", c) }
                w && /cpuUsed:/ { u = $2 } w && /nominalQuota:/ { q = $2 } w && /firstEventTime:/ { f = $2 } w && /lastEventTime:/ { l = $2 }
                END { if (c != "") print c, u, q, f, l }' "$d/summary.yaml" 2>/dev/null | tr -d '"')
  # Finish lag: ms to finish minus ms to (last) admission minus the
  # class's runtime, over finished Workloads: how long the runner took to
  # mark a Workload Finished once its runtime had passed (its quota is held
  # meanwhile).
  add "runner's finish lag p50 / p90 / max" "$s" "$(awk -F, 'FNR == NR { rt[$1] = $2; next }
      FNR > 1 && $6 > 0 && ($2 in rt) { l = $6 - $5 - rt[$2]; print (l < 0 ? 0 : l) }' \
      <(classes_of "$cfg" | tr ' ' ,) "$d/wlStates.csv" 2>/dev/null | sort -n |
    awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit }
      i = int(NR * 0.5 + 0.999999); j = int(NR * 0.9 + 0.999999)
      printf "%.1f / %.1f / %.1f s", v[i] / 1000, v[j] / 1000, v[NR] / 1000 }')"
  add "recorder's end after the last finish (est.)" "$s" "$(status_tail "$s" "$d")"
  add "evictions (summary)" "$s" "$(awk '/totalEvictions:/ { n += $2 } END { print n + 0 }' "$d/summary.yaml" 2>/dev/null)"
  add "controller CPU seconds" "$s" "$(awk -v m="$(get "$s" ctl_cpu_ms)" 'BEGIN { printf "%.1f", m / 1000 }')"
  add "controller peak RSS (VmHWM)" "$s" "$(($(get "$s" ctl_hwm_kib) / 1024)) MiB"
  add "controller API requests per admission" "$s" "$(awk -v r="$(get "$s" ctl_requests)" -v a="$admitted" 'BEGIN { printf "%.2f", (a > 0 ? r / a : 0) }')"
  add "kube-apiserver CPU seconds" "$s" "$(awk -v m="$(get "$s" api_cpu_ms)" 'BEGIN { printf "%.1f", m / 1000 }')"
  if [[ -n $(get "$s" etcd_cpu_ms) ]]; then
    add "etcd CPU seconds" "$s" "$(awk -v m="$(get "$s" etcd_cpu_ms)" 'BEGIN { printf "%.1f", m / 1000 }')"
    add "runner CPU seconds" "$s" "$(awk -v m="$(get "$s" runner_cpu_ms)" 'BEGIN { printf "%.1f", m / 1000 }')"
    add "machine busy CPU seconds (cores used)" "$s" "$(awk -v m="$(get "$s" machine_busy_ms)" -v w="$(get "$s" wall_ms)" \
      'BEGIN { printf "%.1f (%.2f)", m / 1000, (w > 0 ? m / w : 0) }')"
  fi
  add "Kueue rangespec verdict (checker)" "$s" "$(get "$s" verdict)"
  add "runner exit status" "$s" "$(get "$s" runner_rc)"
done

echo
echo "Kueue scalability runner, $(basename "$(dirname "$config")")/$(basename "$config"): lower bound on the drain time ${lb} s"
echo "(demand over quota per cohort ${demand_s} s; last creation plus its runtime ${create_s} s)"
[[ " ${sides[*]} " == *-floor* ]] &&
  echo "(*-floor: the same Workloads with every nominal quota 100000, so no Workload waits for quota)"
printf '%-48s' ""
for s in "${sides[@]}"; do
  case $s in
    kueue) printf '%22s' "minimalkueue" ;; artel) printf '%22s' "arteld" ;;
    kueue-floor) printf '%22s' "minimalkueue, floor" ;; artel-floor) printf '%22s' "arteld, floor" ;;
    *) printf '%22s' "$s" ;;
  esac
done
echo
for l in "${labels[@]}"; do
  printf '%-48s' "$l"
  for s in "${sides[@]}"; do printf '%22s' "${row[$l|$s]:--}"; done
  echo
done
for s in "${sides[@]}"; do
  [[ -f $dir/$s/wlStates.csv ]] &&
    awk -F, -v s="$s" 'NR > 1 { n++; if ($5 > 0 || $6 > 0) a++ } END { if (a < n) printf "%s: INCOMPLETE: %d of %d Workloads admitted; the means and p90s count the others as 0 (as Kueue'"'"'s summary does)\n", s, a, n }' "$dir/$s/wlStates.csv"
  [[ -f $dir/$s/checker.log ]] || continue
  if grep -q -- "--- FAIL" "$dir/$s/checker.log"; then
    echo "$s: checker: $(grep -E '^\s+checker_test.go' "$dir/$s/checker.log" | sed 's/^[[:space:]]*//' | paste -sd';' -)"
  fi
done
