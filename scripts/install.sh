#!/usr/bin/env bash
# Installs stories-tui under PREFIX (default /usr/local): the release binary, its man page and shell completions.
#   PREFIX=~/.local scripts/install.sh         # no root needed
#   DESTDIR=/tmp/pkg PREFIX=/usr scripts/install.sh   # stage for a package
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  -h|--help)
    sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'
    exit 0 ;;
  "") ;;
  *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

PREFIX="${PREFIX:-/usr/local}"
root="${DESTDIR:-}${PREFIX}"
step() { printf '==> %s\n' "$*"; }

step "building the release binary (a few minutes the first time)"
swift build -c release --product stories-tui
bin="$(swift build -c release --show-bin-path)/stories-tui"

step "writing the man page"
swift package --allow-writing-to-package-directory generate-manual --configuration release >/dev/null
manual=".build/plugins/GenerateManual/outputs/stories-tui/stories-tui.1"
[ -f "$manual" ] || { echo "install.sh: the man page was not made ($manual is missing)" >&2; exit 1; }

step "installing into $root"
install -D -m 755 "$bin" "$root/bin/stories-tui"
install -D -m 644 "$manual" "$root/share/man/man1/stories-tui.1"
completions="$(mktemp -d)"
trap 'rm -rf "$completions"' EXIT
for shell in bash zsh fish; do
  "$bin" --generate-completion-script "$shell" > "$completions/$shell"
done
install -D -m 644 "$completions/bash" "$root/share/bash-completion/completions/stories-tui"
install -D -m 644 "$completions/zsh" "$root/share/zsh/site-functions/_stories-tui"
install -D -m 644 "$completions/fish" "$root/share/fish/vendor_completions.d/stories-tui.fish"

step "installed: $PREFIX/bin/stories-tui (man stories-tui; completions for bash, zsh and fish)"
case ":$PATH:" in
  *":$PREFIX/bin:"*) ;;
  *) echo "note: $PREFIX/bin is not on your PATH" ;;
esac
