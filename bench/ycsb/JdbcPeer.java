// A YCSB 0.17 binding for SQL databases over JDBC, written here because
// YCSB's own jdbc binding (site.ycsb:jdbc-binding) is not on Maven Central.
// It uses the table YCSB's jdbc binding creates (usertable: ycsb_key primary
// key, field0..field9) and, like it, prepared statements cached per thread
// and autocommit. One connection per YCSB thread.
// Properties: db.url, db.user, db.passwd.
package aggro.bench.ycsb;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.Vector;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

public class JdbcPeer extends DB {
  private Connection conn;
  private final Map<String, PreparedStatement> statements = new HashMap<>();

  @Override
  public void init() throws DBException {
    try {
      conn = DriverManager.getConnection(getProperties().getProperty("db.url"),
          getProperties().getProperty("db.user", ""), getProperties().getProperty("db.passwd", ""));
      conn.setAutoCommit(true);
    } catch (SQLException e) {
      throw new DBException(e);
    }
  }

  @Override
  public void cleanup() throws DBException {
    try {
      conn.close();
    } catch (SQLException e) {
      throw new DBException(e);
    }
  }

  private PreparedStatement prepared(String sql) throws SQLException {
    PreparedStatement s = statements.get(sql);
    if (s == null) {
      s = conn.prepareStatement(sql);
      statements.put(sql, s);
    }
    return s;
  }

  /** Binds `values` as text from parameter `first` on; the next parameter's index. */
  private static int bind(PreparedStatement s, int first, Iterable<ByteIterator> values) throws SQLException {
    int i = first;
    for (ByteIterator v : values) {
      s.setString(i++, v.toString());
    }
    return i;
  }

  private static void row(ResultSet rs, Set<String> fields, Map<String, ByteIterator> into) throws SQLException {
    ResultSetMetaData meta = rs.getMetaData();
    for (int c = 1; c <= meta.getColumnCount(); c++) {
      String name = meta.getColumnName(c);
      if (!name.equalsIgnoreCase("ycsb_key") && (fields == null || fields.contains(name))) {
        into.put(name, new StringByteIterator(rs.getString(c)));
      }
    }
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      PreparedStatement s = prepared("SELECT * FROM " + table + " WHERE ycsb_key = ?");
      s.setString(1, key);
      try (ResultSet rs = s.executeQuery()) {
        if (!rs.next()) {
          return Status.NOT_FOUND;
        }
        row(rs, fields, result);
        return Status.OK;
      }
    } catch (SQLException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    try {
      PreparedStatement s = prepared("SELECT * FROM " + table + " WHERE ycsb_key >= ? ORDER BY ycsb_key LIMIT ?");
      s.setString(1, startkey);
      s.setInt(2, recordcount);
      try (ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          HashMap<String, ByteIterator> values = new HashMap<>();
          row(rs, fields, values);
          result.add(values);
        }
      }
      return Status.OK;
    } catch (SQLException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    TreeMap<String, ByteIterator> sorted = new TreeMap<>(values);
    String sql = "UPDATE " + table + " SET " + String.join(" = ?, ", sorted.keySet()) + " = ? WHERE ycsb_key = ?";
    try {
      PreparedStatement s = prepared(sql);
      s.setString(bind(s, 1, sorted.values()), key);
      return s.executeUpdate() == 1 ? Status.OK : Status.NOT_FOUND;
    } catch (SQLException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    TreeMap<String, ByteIterator> sorted = new TreeMap<>(values);
    String sql = "INSERT INTO " + table + " (ycsb_key, " + String.join(", ", sorted.keySet()) + ") VALUES (?"
        + ", ?".repeat(sorted.size()) + ")";
    try {
      PreparedStatement s = prepared(sql);
      s.setString(1, key);
      bind(s, 2, sorted.values());
      return s.executeUpdate() == 1 ? Status.OK : Status.ERROR;
    } catch (SQLException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      PreparedStatement s = prepared("DELETE FROM " + table + " WHERE ycsb_key = ?");
      s.setString(1, key);
      return s.executeUpdate() == 1 ? Status.OK : Status.NOT_FOUND;
    } catch (SQLException e) {
      return Status.ERROR;
    }
  }
}
