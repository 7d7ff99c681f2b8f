#!/usr/bin/env bash
# Install or check what the project needs outside Python: Java 17+ (Spark), its
# compiler javac (the Java Flink example, examples/java-filesink),
# Debian's chromium + chromium-driver (browser tests) and prometheus (the server and
# promtool: the Prometheus collector's and /metrics' tests). Installs with apt-get
# when running as root; otherwise says exactly what is missing.
set -euo pipefail

missing=()
java_ok() {
  command -v java >/dev/null 2>&1 || return 1
  local major
  major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)
  [[ -n "$major" && "$major" -ge 17 ]]
}
java_ok || missing+=("openjdk-17-jre-headless")
command -v javac >/dev/null 2>&1 || missing+=("openjdk-17-jdk-headless")
command -v chromium >/dev/null 2>&1 || missing+=("chromium")
command -v chromedriver >/dev/null 2>&1 || missing+=("chromium-driver")
{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || missing+=("prometheus")

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "error: missing system packages: ${missing[*]}" >&2
  echo "       install them (Debian: sudo apt-get install ${missing[*]}) and run make again" >&2
  exit 1
fi
echo "installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
for pkg in "${missing[@]}"; do
  apt-get install -y -qq "$pkg" >>/tmp/mace-apt.log 2>&1 \
    || { [[ $pkg == openjdk-17-jre-headless ]] && apt-get install -y -qq default-jre-headless >>/tmp/mace-apt.log 2>&1; } \
    || true
done
java_ok || { echo "error: Java 17+ is required by Spark and could not be installed (see /tmp/mace-apt.log)" >&2; exit 1; }
command -v chromium >/dev/null 2>&1 || { echo "error: chromium could not be installed (see /tmp/mace-apt.log)" >&2; exit 1; }
command -v chromedriver >/dev/null 2>&1 || { echo "error: chromium-driver could not be installed (see /tmp/mace-apt.log)" >&2; exit 1; }
command -v promtool >/dev/null 2>&1 || { echo "error: prometheus (server and promtool) could not be installed (see /tmp/mace-apt.log)" >&2; exit 1; }
