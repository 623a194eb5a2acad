#!/usr/bin/env bash
# Seeds the fuzz corpora from the project's test data and, when present, the shared corpus of
# real manifests (copied, never committed).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p fuzz/corpus/{review,manifest,rule_file,cluster_dump}
cp testdata/admission-reviews/*.json fuzz/corpus/review/
find testdata -name '*.yaml' -o -name '*.json' | while read -r f; do
  cp "$f" "fuzz/corpus/manifest/$(echo "$f" | tr '/' '_')"
done
if [ -d ../shared/corpus/real ]; then
  find ../shared/corpus/real -type f -size -256k | while read -r f; do
    cp "$f" "fuzz/corpus/manifest/real_$(basename "$f")"
  done
fi
cp src/rules/default-rules.yaml fuzz/corpus/rule_file/
for f in testdata/suites/*/rules.yaml; do cp "$f" "fuzz/corpus/rule_file/$(echo "$f" | tr '/' '_')"; done
cp testdata/explain/*.yaml testdata/workloadspread/cluster-dump.yaml fuzz/corpus/cluster_dump/
