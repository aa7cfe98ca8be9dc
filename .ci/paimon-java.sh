#!/usr/bin/env bash
# Build (or reuse) the Java Paimon oracle used by the compatibility tests (tests/compat/java_oracle.py).
#
# Usage: .ci/paimon-java.sh [DIR]     (default: ${XDG_CACHE_HOME:-$HOME/.cache}/dyntable-paimon-java)
# Env:   PYTHON   interpreter with pip and pyspark (default: python3); pyspark's jars give Hadoop
#
# Apache Paimon 0.9.0's Java bundle ships inside the pypaimon 0.2.0 source distribution on PyPI
# (deps/jars/paimon-python-java-bridge-0.9.0.jar). This script downloads that sdist with pip into
# DIR, extracts the jar, compiles tests/compat/java/*.java against it with javac, and prints the
# class path (bundle + driver classes + pyspark's two shaded Hadoop client jars) on its last line:
#   export DYNTABLE_PAIMON_JAVA_CP="$(bash .ci/paimon-java.sh | tail -n 1)"
# Idempotent: the sdist and jar are downloaded once; the driver is compiled into a directory named
# after its sources' hash, so edited sources are recompiled and unchanged ones reused. Writes
# nothing outside DIR (pip runs without its cache). Concurrent runs serialise on DIR/.lock.
set -euo pipefail

PYPAIMON_SDIST_VERSION="0.2.0"
BRIDGE_JAR="paimon-python-java-bridge-0.9.0.jar"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src_dir="$repo_root/tests/compat/java"
dir="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/dyntable-paimon-java}"
python="${PYTHON:-python3}"

fail() { echo "paimon-java.sh: $*" >&2; exit 1; }

if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; then
    PATH="$JAVA_HOME/bin:$PATH"
fi
command -v java >/dev/null || fail "no 'java' on PATH (Java 11+ is needed; 17 is tested)"
command -v javac >/dev/null || fail "no 'javac' on PATH (install a JDK, not only a JRE)"

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if command -v flock >/dev/null; then  # util-linux; without it, concurrent first runs may race
    exec 9>"$dir/.lock"
    flock 9
fi

# 1. Paimon's bundle, from the pypaimon sdist.
jar="$dir/$BRIDGE_JAR"
if [ ! -s "$jar" ]; then
    mkdir -p "$dir/download"
    sdist="$dir/download/pypaimon-$PYPAIMON_SDIST_VERSION.tar.gz"
    if [ ! -s "$sdist" ]; then
        "$python" -m pip download --quiet --disable-pip-version-check --no-cache-dir --no-deps \
            --no-binary :all: "pypaimon==$PYPAIMON_SDIST_VERSION" -d "$dir/download" >&2 \
            || fail "pip could not download pypaimon==$PYPAIMON_SDIST_VERSION's sdist"
    fi
    tar -xzf "$sdist" -C "$dir/download" "pypaimon-$PYPAIMON_SDIST_VERSION/deps/jars/$BRIDGE_JAR" \
        || fail "$sdist has no deps/jars/$BRIDGE_JAR"
    mv "$dir/download/pypaimon-$PYPAIMON_SDIST_VERSION/deps/jars/$BRIDGE_JAR" "$jar.tmp"
    mv "$jar.tmp" "$jar"
    rm -rf "$dir/download"  # the jar is all that is used; the 40 MB sdist is not kept
fi

# 2. Hadoop: Paimon's catalog and Parquet code need org.apache.hadoop.conf.Configuration, which
#    the shaded client API jar has; its shaded runtime jar holds what that class loads.
pyspark_jars="$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')" \
    || fail "$python cannot import pyspark (set PYTHON to dyntable's venv python)"
hadoop_cp=""
for name in hadoop-client-api hadoop-client-runtime; do
    found="$(ls "$pyspark_jars/$name"-*.jar 2>/dev/null | head -n 1)"
    [ -n "$found" ] || fail "no $name-*.jar in $pyspark_jars"
    hadoop_cp="$hadoop_cp:$found"
done

# 3. The driver, compiled once per version of its sources.
sources=("$src_dir"/*.java)
digest="$(cat "${sources[@]}" | sha256sum | cut -c1-16)"
classes="$dir/classes-$digest"
if [ ! -f "$classes/PaimonOracle.class" ]; then
    rm -rf "$classes.tmp"
    mkdir -p "$classes.tmp"
    javac -nowarn -encoding UTF-8 -d "$classes.tmp" -cp "$jar$hadoop_cp" "${sources[@]}" >&2 \
        || fail "javac failed on ${sources[*]}"
    mv "$classes.tmp" "$classes"
fi

cp="$classes:$jar$hadoop_cp"
# 4. Prove it starts and finds Paimon before handing the class path out.
java -XX:TieredStopAtLevel=1 -cp "$cp" PaimonOracle '{"op":"version"}' 2>/dev/null | grep -q '"paimon":"0.9.0"' \
    || fail "the oracle does not start with class path $cp"
echo "$cp"
