// A YCSB 0.17 binding for Apache Cassandra, written here because YCSB's own
// (site.ycsb:cassandra-binding) is not on Maven Central. It does what that
// binding (CassandraCQLClient) does: the DataStax Java driver 3.x, one
// session shared by every YCSB thread, token-aware routing (the driver's
// default policy), statements prepared once per field set, the table
// usertable (y_id text primary key, field0..fieldN text), scans by
// token(y_id) >= token(?) LIMIT ?.
// Properties: hosts (127.0.0.1), port (9042), cassandra.keyspace (aggro),
// cassandra.consistency (LOCAL_QUORUM, for reads and writes).
package aggro.bench.ycsb;

import com.datastax.driver.core.BoundStatement;
import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.ColumnDefinitions;
import com.datastax.driver.core.ConsistencyLevel;
import com.datastax.driver.core.PreparedStatement;
import com.datastax.driver.core.ResultSet;
import com.datastax.driver.core.Row;
import com.datastax.driver.core.Session;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

public class CassandraPeer extends DB {
  private static final Object LOCK = new Object();
  private static Cluster cluster;
  private static Session session;
  private static int users;
  private static ConsistencyLevel consistency;
  private static final Map<String, PreparedStatement> STATEMENTS = new ConcurrentHashMap<>();

  @Override
  public void init() throws DBException {
    synchronized (LOCK) {
      users++;
      if (session != null) {
        return;
      }
      String[] hosts = getProperties().getProperty("hosts", "127.0.0.1").split(",");
      int port = Integer.parseInt(getProperties().getProperty("port", "9042"));
      consistency = ConsistencyLevel.valueOf(getProperties().getProperty("cassandra.consistency", "LOCAL_QUORUM"));
      cluster = Cluster.builder().addContactPoints(hosts).withPort(port).build();
      session = cluster.connect(getProperties().getProperty("cassandra.keyspace", "aggro"));
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (LOCK) {
      if (--users == 0) {
        cluster.close();
        session = null;
      }
    }
  }

  private static PreparedStatement prepared(String cql) {
    return STATEMENTS.computeIfAbsent(cql, text -> session.prepare(text).setConsistencyLevel(consistency));
  }

  private static String columns(Set<String> fields) {
    return fields == null ? "*" : String.join(", ", new TreeSet<>(fields));
  }

  private static void readRow(Row row, Map<String, ByteIterator> result) {
    ColumnDefinitions defs = row.getColumnDefinitions();
    for (ColumnDefinitions.Definition d : defs) {
      ByteBuffer value = row.getBytesUnsafe(d.getName());
      if (value == null) {
        result.put(d.getName(), null);
        continue;
      }
      byte[] bytes = new byte[value.remaining()];
      value.duplicate().get(bytes);
      result.put(d.getName(), new ByteArrayByteIterator(bytes));
    }
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      ResultSet rs = session.execute(prepared("SELECT " + columns(fields) + " FROM " + table + " WHERE y_id = ? LIMIT 1").bind(key));
      Row row = rs.one();
      if (row == null) {
        return Status.NOT_FOUND;
      }
      readRow(row, result);
      return Status.OK;
    } catch (Exception e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(String table, String start, int count, Set<String> fields, Vector<HashMap<String, ByteIterator>> result) {
    try {
      String cql = "SELECT " + columns(fields) + " FROM " + table + " WHERE token(y_id) >= token(?) LIMIT ?";
      for (Row row : session.execute(prepared(cql).bind(start, count))) {
        HashMap<String, ByteIterator> one = new HashMap<>();
        readRow(row, one);
        result.add(one);
      }
      return Status.OK;
    } catch (Exception e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      List<String> names = new ArrayList<>(new TreeSet<>(values.keySet()));
      List<String> sets = new ArrayList<>();
      for (String n : names) {
        sets.add(n + " = ?");
      }
      BoundStatement b = prepared("UPDATE " + table + " SET " + String.join(", ", sets) + " WHERE y_id = ?").bind();
      for (int i = 0; i < names.size(); i++) {
        b.setString(i, values.get(names.get(i)).toString());
      }
      b.setString(names.size(), key);
      session.execute(b);
      return Status.OK;
    } catch (Exception e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      List<String> names = new ArrayList<>(new TreeSet<>(values.keySet()));
      List<String> marks = new ArrayList<>();
      marks.add("?");
      for (int i = 0; i < names.size(); i++) {
        marks.add("?");
      }
      String cql = "INSERT INTO " + table + " (y_id, " + String.join(", ", names) + ") VALUES (" + String.join(", ", marks) + ")";
      BoundStatement b = prepared(cql).bind();
      b.setString(0, key);
      for (int i = 0; i < names.size(); i++) {
        b.setString(i + 1, values.get(names.get(i)).toString());
      }
      session.execute(b);
      return Status.OK;
    } catch (Exception e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      session.execute(prepared("DELETE FROM " + table + " WHERE y_id = ?").bind(key));
      return Status.OK;
    } catch (Exception e) {
      return Status.ERROR;
    }
  }
}
