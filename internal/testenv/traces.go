package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Traces returns every place the service's stores hold needle (a uid, say), as "table.column
// (n rows)" and "redis key …": an independent check of an erasure that knows nothing of the
// service's tables or keys. It reads the schema of db's database from information_schema and
// searches every text, binary and JSON column of every table in it (so a table added later is
// searched too), and SCANs every Redis key under prefix (from every master of a cluster), looking
// at the key's name and whole value whatever its type.
func Traces(ctx context.Context, db *sql.DB, rdb redis.UniversalClient, prefix, needle string) ([]string, error) {
	found, err := mysqlTraces(ctx, db, needle)
	if err != nil {
		return nil, err
	}
	more, err := redisTraces(ctx, rdb, prefix, needle)
	return append(found, more...), err
}

// textTypes are the column types that can hold a uid's bytes.
const textTypes = `'char','varchar','tinytext','text','mediumtext','longtext','binary','varbinary',
	'tinyblob','blob','mediumblob','longblob','json','enum','set'`

func mysqlTraces(ctx context.Context, db *sql.DB, needle string) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT c.table_name, c.column_name FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = DATABASE() AND t.table_type = 'BASE TABLE' AND c.data_type IN (`+textTypes+`)
		ORDER BY c.table_name, c.ordinal_position`)
	if err != nil {
		return nil, fmt.Errorf("list columns: %w", err)
	}
	type column struct{ table, name string }
	var cols []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.table, &c.name); err != nil {
			rows.Close()
			return nil, err
		}
		cols = append(cols, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("no text column in the schema: not the service's database")
	}
	var found []string
	for _, c := range cols {
		// The needle as bytes: a binary search in every column whatever its collation, so "U1"
		// does not hide in a case-insensitive column and a BLOB is searched too.
		var n int64
		q := fmt.Sprintf("SELECT COUNT(*) FROM `%s` WHERE INSTR(CAST(`%s` AS BINARY), CAST(? AS BINARY)) > 0", c.table, c.name)
		if err := db.QueryRowContext(ctx, q, needle).Scan(&n); err != nil {
			return nil, fmt.Errorf("search %s.%s: %w", c.table, c.name, err)
		}
		if n > 0 {
			found = append(found, fmt.Sprintf("%s.%s (%d rows)", c.table, c.name, n))
		}
	}
	return found, nil
}

// TraceRows counts, per table of db's schema, the rows in which any text, binary or JSON column
// holds needle (a substring, byte for byte): the rows that name a uid, found as Traces finds them,
// knowing nothing of the service's tables. Tables without such a row are left out.
func TraceRows(ctx context.Context, db *sql.DB, needle string) (map[string]int64, error) {
	rows, err := db.QueryContext(ctx, `SELECT c.table_name, c.column_name FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = DATABASE() AND t.table_type = 'BASE TABLE' AND c.data_type IN (`+textTypes+`)
		ORDER BY c.table_name, c.ordinal_position`)
	if err != nil {
		return nil, fmt.Errorf("list columns: %w", err)
	}
	cols := map[string][]string{}
	var tables []string
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			rows.Close()
			return nil, err
		}
		if _, ok := cols[table]; !ok {
			tables = append(tables, table)
		}
		cols[table] = append(cols[table], col)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	found := map[string]int64{}
	for _, table := range tables {
		conds := make([]string, len(cols[table]))
		args := make([]any, len(cols[table]))
		for i, col := range cols[table] {
			conds[i] = fmt.Sprintf("INSTR(CAST(`%s` AS BINARY), CAST(? AS BINARY)) > 0", col)
			args[i] = needle
		}
		var n int64
		q := fmt.Sprintf("SELECT COUNT(*) FROM `%s` WHERE %s", table, strings.Join(conds, " OR "))
		if err := db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			return nil, fmt.Errorf("search %s: %w", table, err)
		}
		if n > 0 {
			found[table] = n
		}
	}
	return found, nil
}

func redisTraces(ctx context.Context, rdb redis.UniversalClient, prefix, needle string) ([]string, error) {
	keys, err := RedisKeys(ctx, rdb, prefix+"*")
	if err != nil {
		return nil, fmt.Errorf("scan keys: %w", err)
	}
	var found []string
	for _, k := range keys {
		if strings.Contains(k, needle) {
			found = append(found, "redis key "+k)
			continue
		}
		vals, err := redisValues(ctx, rdb, k)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", k, err)
		}
		for _, v := range vals {
			if strings.Contains(v, needle) {
				found = append(found, "redis value of "+k)
				break
			}
		}
	}
	return found, nil
}

// redisValues returns every string a key's value holds, whatever its type.
func redisValues(ctx context.Context, rdb redis.UniversalClient, key string) ([]string, error) {
	typ, err := rdb.Type(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	switch typ {
	case "none":
		return nil, nil // expired since the scan
	case "string":
		v, err := rdb.Get(ctx, key).Result()
		if err == redis.Nil {
			return nil, nil
		}
		return []string{v}, err
	case "list":
		return rdb.LRange(ctx, key, 0, -1).Result()
	case "set":
		return rdb.SMembers(ctx, key).Result()
	case "zset":
		return rdb.ZRange(ctx, key, 0, -1).Result()
	case "hash":
		m, err := rdb.HGetAll(ctx, key).Result()
		out := make([]string, 0, 2*len(m))
		for f, v := range m {
			out = append(out, f, v)
		}
		return out, err
	case "stream":
		msgs, err := rdb.XRange(ctx, key, "-", "+").Result()
		var out []string
		for _, m := range msgs {
			for f, v := range m.Values {
				out = append(out, f, fmt.Sprint(v))
			}
		}
		return out, err
	}
	return nil, fmt.Errorf("a key of type %s: teach Traces to read it", typ)
}
