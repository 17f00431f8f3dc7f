// A YCSB 0.17 binding for Redis, written here because YCSB's own redis
// binding (site.ycsb:redis-binding) is not on Maven Central. It stores
// records as YCSB's redis binding documents them: a hash per record, and
// the sorted set "_indices" scoring each key by its String.hashCode() for
// scans. Jedis, as YCSB's binding; one connection per YCSB thread.
// Properties: redis.host (127.0.0.1), redis.port (6379).
package aggro.bench.ycsb;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Vector;
import redis.clients.jedis.Jedis;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

public class RedisPeer extends DB {
  private static final String INDEX = "_indices";
  private Jedis jedis;

  @Override
  public void init() throws DBException {
    String host = getProperties().getProperty("redis.host", "127.0.0.1");
    int port = Integer.parseInt(getProperties().getProperty("redis.port", "6379"));
    jedis = new Jedis(host, port);
    jedis.connect();
  }

  @Override
  public void cleanup() throws DBException {
    jedis.close();
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    if (fields == null) {
      Map<String, String> all = jedis.hgetAll(key);
      StringByteIterator.putAllAsByteIterators(result, all);
      return all.isEmpty() ? Status.NOT_FOUND : Status.OK;
    }
    String[] names = fields.toArray(new String[0]);
    List<String> values = jedis.hmget(key, names);
    for (int i = 0; i < names.length; i++) {
      if (values.get(i) != null) {
        result.put(names[i], new StringByteIterator(values.get(i)));
      }
    }
    return result.isEmpty() ? Status.NOT_FOUND : Status.OK;
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    jedis.hmset(key, StringByteIterator.getStringMap(values));
    jedis.zadd(INDEX, key.hashCode(), key);
    return Status.OK;
  }

  @Override
  public Status delete(String table, String key) {
    long removed = jedis.del(key);
    jedis.zrem(INDEX, key);
    return removed == 0 ? Status.NOT_FOUND : Status.OK;
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    return "OK".equals(jedis.hmset(key, StringByteIterator.getStringMap(values))) ? Status.OK : Status.ERROR;
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    for (String key : jedis.zrangeByScore(INDEX, key(startkey), Double.POSITIVE_INFINITY, 0, recordcount)) {
      HashMap<String, ByteIterator> values = new HashMap<>();
      read(table, key, fields, values);
      result.add(values);
    }
    return Status.OK;
  }

  private static double key(String k) {
    return k.hashCode();
  }
}
