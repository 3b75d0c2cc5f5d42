#!/usr/bin/env bash
# Prepares this machine for the browser tests in e2e/ without downloading a
# browser or a driver from anywhere but Debian and npm:
#   1. Debian's Chromium at /usr/bin/chromium (apt-get install chromium);
#   2. the playwright-go driver folder .cache/playwright-driver/<version>/,
#      i.e. `node` (a symlink to this machine's node) and `package/` (the
#      unpacked `npm pack playwright-core@<version>`), where <version> is the
#      playwrightCliVersion the pinned playwright-go module expects;
#   3. axe-core (Deque's accessibility engine, npm) in .cache/axe-core/package/,
#      which e2e/a11y_test.go injects into the console's main pages.
# Idempotent: work already done is skipped. Run it once, then `go test ./e2e/`.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

module="github.com/playwright-community/playwright-go"
chromium="/usr/bin/chromium"

say() { printf 'e2e/setup.sh: %s\n' "$*"; }
die() { printf 'e2e/setup.sh: error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "need root (or sudo) to run: $*"
  fi
}

# --- 1. Chromium from Debian -------------------------------------------------
if [ -x "$chromium" ]; then
  say "chromium: already installed ($("$chromium" --version 2>/dev/null || echo "$chromium"))"
else
  export DEBIAN_FRONTEND=noninteractive
  # Refresh the package lists only when they do not know chromium (empty or
  # stale lists); a failed install is retried once after an update, which also
  # covers lists whose .deb has since been replaced on the mirror (404).
  updated=no
  # (Output captured first: with pipefail, `apt-cache … | grep -q` can fail
  # on SIGPIPE even when grep matched.)
  policy="$(apt-cache policy chromium 2>/dev/null || true)"
  if [[ "$policy" != *"Candidate: "[0-9]* ]]; then
    say "chromium: package lists do not know chromium; running apt-get update"
    as_root apt-get -o DPkg::Lock::Timeout=300 update -qq
    updated=yes
  fi
  # DPkg::Lock::Timeout: wait for another apt (a second checkout's setup)
  # instead of failing at once on its lock.
  # --no-install-recommends skips upower, udev, mesa, printing…; headless
  # tests need none of them, only a font (fonts-liberation) for screenshots.
  apt_log="$(mktemp)"
  install_chromium() {
    as_root apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends chromium fonts-liberation >"$apt_log" 2>&1
  }
  say "chromium: installing Debian's chromium package (about a minute)"
  if ! install_chromium; then
    if [ "$updated" = yes ]; then
      cat "$apt_log" >&2
      die "apt-get install chromium failed"
    fi
    say "chromium: install failed; running apt-get update and retrying"
    as_root apt-get -o DPkg::Lock::Timeout=300 update -qq
    install_chromium || { cat "$apt_log" >&2; die "apt-get install chromium failed"; }
  fi
  rm -f "$apt_log"
  [ -x "$chromium" ] || die "apt-get installed chromium but $chromium is missing"
  say "chromium: installed ($("$chromium" --version 2>/dev/null || echo "$chromium"))"
fi

# --- 2. The playwright-go driver folder ---------------------------------------
command -v go >/dev/null 2>&1 || die "go is not on PATH"
node="$(command -v node 2>/dev/null)" || die "node (>= 18) is not on PATH; install Debian's nodejs"
node_major="$("$node" -e 'process.stdout.write(process.versions.node.split(".")[0])')"
[ "$node_major" -ge 18 ] || die "node $("$node" --version) is too old; Playwright needs node >= 18"

# The exact Playwright version the pinned module drives: its playwrightCliVersion.
mod_json="$(go mod download -json "$module")" || die "go mod download $module failed: $mod_json"
mod_dir="$(printf '%s\n' "$mod_json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
[ -n "$mod_dir" ] && [ -f "$mod_dir/run.go" ] || die "cannot find $module's source (go mod download -json gave: $mod_json)"
version="$(sed -n 's/^const playwrightCliVersion = "\([^"]*\)".*/\1/p' "$mod_dir/run.go")"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "cannot read playwrightCliVersion from $mod_dir/run.go (got '$version')"

driver="$repo/.cache/playwright-driver/$version"
driver_ok() {
  [ -x "$driver/node" ] && [ -f "$driver/package/cli.js" ] &&
    [[ "$("$driver/node" "$driver/package/cli.js" --version 2>/dev/null)" == *"$version"* ]]
}

if driver_ok; then
  say "driver: playwright-core $version already in ${driver#"$repo"/}"
else
  say "driver: building ${driver#"$repo"/} from npm's playwright-core@$version"
  mkdir -p "$repo/.cache/playwright-driver"
  tmp="$(mktemp -d "$repo/.cache/playwright-driver/.build-$version.XXXXXX")"
  chmod 755 "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  tarball="$(cd "$tmp" && npm pack --silent "playwright-core@$version" | tail -n 1)"
  [ -f "$tmp/$tarball" ] || die "npm pack playwright-core@$version produced no tarball"
  tar -xzf "$tmp/$tarball" -C "$tmp"
  rm -f "$tmp/$tarball"
  ln -s "$node" "$tmp/node"
  rm -rf "$driver"
  mv "$tmp" "$driver"
  trap - EXIT
  driver_ok || die "the driver in $driver does not report version $version"
  say "driver: ready (node $("$node" --version) -> $node)"
fi

# --- 3. axe-core for the accessibility check ----------------------------------
# Pinned: a new release may add rules, and a rule change should be a commit.
axe_version="4.14.1"
axe="$repo/.cache/axe-core"
axe_ok() {
  [ -f "$axe/package/axe.min.js" ] && grep -q "\"version\": \"$axe_version\"" "$axe/package/package.json" 2>/dev/null
}
if axe_ok; then
  say "axe-core: $axe_version already in ${axe#"$repo"/}"
else
  say "axe-core: fetching npm's axe-core@$axe_version into ${axe#"$repo"/}"
  mkdir -p "$repo/.cache"
  tmp="$(mktemp -d "$repo/.cache/.axe-$axe_version.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  tarball="$(cd "$tmp" && npm pack --silent "axe-core@$axe_version" | tail -n 1)"
  [ -f "$tmp/$tarball" ] || die "npm pack axe-core@$axe_version produced no tarball"
  tar -xzf "$tmp/$tarball" -C "$tmp"
  rm -f "$tmp/$tarball"
  rm -rf "$axe"
  mv "$tmp" "$axe"
  trap - EXIT
  axe_ok || die "axe-core in $axe is not version $axe_version"
  say "axe-core: ready"
fi

say "done; run the browser tests with: go test ./e2e/"
