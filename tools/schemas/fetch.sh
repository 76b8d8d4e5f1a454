#!/usr/bin/env bash
# Fetch the pinned schemas of tools/schemas/*.txt into build/schemas/.
#
# Each module comes from the Go module proxy (`go mod download`), into a module cache
# under build/schemas/ that is removed afterwards; only the listed files are kept:
# Kubernetes' OpenAPI under openapi/, CRDs under crds/. build/schemas/modules.txt
# records what was fetched, so a second run with the same pins does nothing.
# Validation then runs offline (tests/schemas/).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${SCHEMAS_DIR:-$root/build/schemas}"
mkdir -p "$out"
# Every pin list, in name order, as one list: its copy in build/schemas/ says what is there.
pins="$(mktemp)"
trap 'rm -f "$pins"' EXIT
cat "$root"/tools/schemas/*.txt > "$pins"

if [[ -f "$out/modules.txt" ]] && cmp -s "$pins" "$out/modules.txt"; then
  echo "schemas: $out is up to date"
  exit 0
fi

start=$SECONDS
rm -rf "$out"
mkdir -p "$out/openapi" "$out/crds"
export GOMODCACHE="$out/.gomod" GOFLAGS=-modcacherw GOTOOLCHAIN=local GO111MODULE=on
work="$(mktemp -d)"
trap 'rm -rf "$work" "$GOMODCACHE" "$pins"' EXIT

declare -A dirs
while read -r module version path; do
  [[ -z "$module" || "$module" == \#* ]] && continue
  key="$module@$version"
  if [[ -z "${dirs[$key]:-}" ]]; then
    echo "schemas: downloading $key"
    # A download can fail once on a busy machine or proxy: try three times, saying why.
    dir=""
    for try in 1 2 3; do
      if json="$(cd "$work" && go mod download -json "$key" 2>&1)"; then
        dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$json")"
        break
      fi
      echo "schemas: download of $key failed (try $try): $(tail -c 400 <<<"$json")" >&2
      sleep $((try * 2))
    done
    if [[ -z "$dir" || ! -d "$dir" ]]; then
      echo "schemas: could not download $key" >&2
      exit 1
    fi
    dirs[$key]="$dir"
  fi
  case "$path" in
    *.json) dest="$out/openapi" ;;
    *) dest="$out/crds" ;;
  esac
  cp "${dirs[$key]}/$path" "$dest/"
done < "$pins"

chmod -R u+w "$out"
cp "$pins" "$out/modules.txt"
echo "schemas: fetched into $out in $((SECONDS - start))s"
