#!/usr/bin/env bash
# Finds a JDK >= the required feature release (default 22) in the places maven-toolchains-plugin's
# discovery searches and prints its home. When there is none, says so in one line that names
# what to install (instead of the plugin's generic "cannot find matching toolchain" error) and
# exits 1. Used by the parent pom (before toolchain selection) and by bin/rdma4j.
required=${1:-22}

feature_of() { # $1 = a JDK home; prints its feature release or nothing
  local v
  [ -x "$1/bin/javac" ] && [ -f "$1/release" ] || return
  v=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release")
  [ "$v" = 1 ] && v=8
  echo "$v"
}

candidates=("${JAVA_HOME:-}" "${JDK_HOME:-}")
if java_bin=$(command -v java 2>/dev/null); then
  candidates+=("$(dirname "$(dirname "$(readlink -f "$java_bin")")")")
fi
for d in /usr/lib/jvm/* /usr/java/* /usr/local/java/* /opt/java/* /opt/jdk* /opt/*/jdk* \
         "$HOME"/.sdkman/candidates/java/* "$HOME"/.jdks/* "$HOME"/.m2/jdks/* \
         "$HOME"/.gradle/jdks/* "$HOME"/.local/share/mise/installs/java/* \
         "$HOME"/.asdf/installs/java/*; do
  candidates+=("$d")
done
best= best_v=0
for home in "${candidates[@]}"; do
  [ -n "$home" ] || continue
  v=$(feature_of "$home")
  if [ -n "$v" ] && [ "$v" -ge "$required" ] && [ "$v" -gt "$best_v" ]; then best=$home best_v=$v; fi
done
if [ -n "$best" ]; then echo "$best"; exit 0; fi
# Explicit toolchains: leave the choice to the plugin.
[ -f "$HOME/.m2/toolchains.xml" ] && [ -z "${RDMA4J_NEED_JDK_HOME:-}" ] && exit 0
echo "rdma4j needs a JDK >= $required and found none (JAVA_HOME, PATH, /usr/lib/jvm, SDKMAN, ~/.jdks): install one, e.g. 'apt-get install temurin-25-jdk' (Adoptium's apt repository) or 'sdk install java 25-tem', then run the same command again." >&2
exit 1
