# Sourced by the YCSB benches (scenario-vs-peers.sh, ycsb/distributions.sh): a JDK and Maven (a
# benchmark's peer: installed here, not by the tests), then YCSB 0.17's core, Jedis, the PostgreSQL
# JDBC driver and the DataStax Java driver 3.x (with their dependencies) from Maven Central, once,
# into $ycsb/lib.
#   sets: ycsb (the directory; YCSB_HOME overrides it)
if ! command -v javac >/dev/null || ! command -v mvn >/dev/null; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends default-jdk-headless maven >/dev/null
fi
ycsb=${YCSB_HOME:-$HOME/.cache/aggro/ycsb-0.17.0}
if [ ! -f "$ycsb/lib/core-0.17.0.jar" ] || [ ! -f "$ycsb/lib/jedis-2.9.0.jar" ] || [ ! -f "$ycsb/lib/postgresql-42.7.4.jar" ] \
  || [ ! -f "$ycsb/lib/cassandra-driver-core-3.11.5.jar" ]; then
  mkdir -p "$ycsb"
  cat >"$ycsb/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>aggro.bench</groupId><artifactId>ycsb-peer</artifactId><version>3</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>site.ycsb</groupId><artifactId>core</artifactId><version>0.17.0</version></dependency>
    <dependency><groupId>redis.clients</groupId><artifactId>jedis</artifactId><version>2.9.0</version></dependency>
    <dependency><groupId>org.postgresql</groupId><artifactId>postgresql</artifactId><version>42.7.4</version></dependency>
    <dependency><groupId>com.datastax.cassandra</groupId><artifactId>cassandra-driver-core</artifactId><version>3.11.5</version></dependency>
  </dependencies>
</project>
POM
  (cd "$ycsb" && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib >/dev/null)
fi
