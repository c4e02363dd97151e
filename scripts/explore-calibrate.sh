#!/usr/bin/env bash
# Regenerates explore/calibration/<family>.json, the measured points that kiln explore's
# resource model (explore/resource_model.h) is fitted to: `kiln synth` (Yosys, and for
# the iCEBreaker nextpnr) on each calibration configuration of explore/calibration/configs
# for one board per FPGA family, one run at a time (a run takes 1-3 minutes on 2 cores).
#
#   scripts/explore-calibrate.sh [FAMILY...]     FAMILY: xcup, xc7, ice40 (default: all)
#
# Environment: KILN (the kiln binary, default build/tools/kiln/kiln), WORK (the synthesis
# folders, default /tmp/kiln-explore-calibrate; a run whose report is there is reused, so
# an interrupted calibration resumes). The file is rewritten after every run.
set -euo pipefail
cd "$(dirname "$0")/.."
KILN=${KILN:-build/tools/kiln/kiln}
WORK=${WORK:-/tmp/kiln-explore-calibrate}
CAL=explore/calibration

board_of() {
  case $1 in
    xcup) echo ultra96 ;;
    xc7) echo pynq-z1 ;;
    ice40) echo icebreaker ;;
    *) echo "explore-calibrate: unknown family '$1' (xcup, xc7, ice40)" >&2; exit 2 ;;
  esac
}

# The configurations of each family, cheapest first. The Xilinx ones span LOG_BLOCK 2..5
# and buffers from 256 to VTA's default depths; the iCE40 ones are those near tiny.json
# that an UP5K could hold (the board top adds the in-order core and the UART link).
configs_of() {
  case $1 in
    xcup) echo b1x2-tiny b1x3-small b1x4-small b1x2-deep b2x3-mid b1x3-deep b1x4-default b1x5-small ;;
    xc7) echo b1x2-tiny b1x3-small b1x4-small b1x2-deep b2x3-mid b1x3-deep b1x4-default b1x5-small ;;
    ice40) echo b1x1-tiny b1x2-tiny b1x3-tiny ;;
  esac
}

# Writes $CAL/<family>.json from the reports under $WORK/<family>.
assemble() {
  local family=$1 board=$2
  /usr/bin/python3 - "$family" "$board" "$WORK/$family" "$CAL" <<'EOF'
import json, os, sys
family, board, work, cal = sys.argv[1:5]
top = "kiln_icebreaker" if family == "ice40" else "kiln_top"
points = []
for name in sorted(os.listdir(work)):
    if not name.endswith(".report.json"):
        continue
    with open(os.path.join(work, name)) as f:
        rep = json.load(f)
    with open(os.path.join(work, name.replace(".report.json", ".meta.json"))) as f:
        meta = json.load(f)
    with open(os.path.join(cal, "configs", meta["config"] + ".json")) as f:
        config = json.load(f)
    points.append({
        "config": config,
        "used": {k: v["used"] for k, v in rep["resources"].items()},
        "fmax_mhz": rep.get("fmax_mhz"),
        "seconds": round(rep["seconds"], 1),
        "date": meta["date"],
        "commit": meta["commit"],
        "yosys": meta["yosys"],
    })
out = {
    "family": family,
    "board": board,
    "top": top,
    "flow": "scripts/explore-calibrate.sh " + family + " (kiln synth --board " + board + ")",
    "points": points,
}
with open(os.path.join(cal, family + ".json"), "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
EOF
}

families=("$@")
[ ${#families[@]} -gt 0 ] || families=(xcup xc7 ice40)
commit=$(git rev-parse --short HEAD)
yosys_version=$(yosys -V | head -1)
for family in "${families[@]}"; do
  board=$(board_of "$family")
  mkdir -p "$WORK/$family"
  for cfg in $(configs_of "$family"); do
    report="$WORK/$family/$cfg.report.json"
    if [ -s "$report" ]; then
      echo "explore-calibrate: $family $cfg: reusing $report"
      continue
    fi
    echo "explore-calibrate: $family ($board) $cfg ..."
    "$KILN" synth --board "$board" --config "$CAL/configs/$cfg.json" \
      --out "$WORK/$family/$cfg" --json > "$report.tmp"
    mv "$report.tmp" "$report"
    printf '{"config": "%s", "date": "%s", "commit": "%s", "yosys": "%s"}\n' "$cfg" \
      "$(date -u +%Y-%m-%d)" "$commit" "$yosys_version" > "$WORK/$family/$cfg.meta.json"
    assemble "$family" "$board"
  done
  assemble "$family" "$board"
done
