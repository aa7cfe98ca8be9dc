import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * What a JDBC GUI (DBeaver, DataGrip) asks when it browses a schema, printed one result row per
 * line as tab-separated fields after a tag naming the call: the dyntable-server tests check it.
 * It first creates the temporary view {@code recent} over the table, to see it listed.
 * Arguments: JDBC URL, user, password, schema, table.
 */
public final class Browse {
    private static void print(String tag, ResultSet rs, String... columns) throws SQLException {
        int rows = 0;
        while (rs.next()) {
            StringBuilder line = new StringBuilder(tag);
            for (String column : columns) {
                line.append('\t').append(rs.getString(column));
            }
            System.out.println(line);
            rows++;
        }
        System.out.println(tag + "#\t" + rows);
        rs.close();
    }

    private static void count(String tag, ResultSet rs) throws SQLException {
        int rows = 0;
        while (rs.next()) {
            rows++;
        }
        System.out.println(tag + "#\t" + rows);
        rs.close();
    }

    public static void main(String[] args) throws Exception {
        Class.forName("org.apache.hive.jdbc.HiveDriver");
        String schema = args[3], table = args[4];
        try (Connection conn = DriverManager.getConnection(args[0], args[1], args[2])) {
            try (java.sql.Statement st = conn.createStatement()) {
                st.execute("CREATE TEMPORARY VIEW recent AS SELECT * FROM " + schema + "." + table);
            }
            DatabaseMetaData md = conn.getMetaData();
            System.out.println("product\t" + md.getDatabaseProductName());
            print("schemas", md.getSchemas(), "TABLE_SCHEM");
            print("tables", md.getTables(null, schema, "%", null), "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE",
                  "REMARKS");
            print("tables-typed", md.getTables(null, schema, "%", new String[] {"TABLE", "VIEW"}),
                  "TABLE_NAME", "TABLE_TYPE");
            print("views-only", md.getTables(null, schema, "%", new String[] {"VIEW"}), "TABLE_NAME");
            print("system", md.getTables(null, schema, "%", new String[] {"SYSTEM TABLE"}), "TABLE_NAME");
            print("system-named", md.getTables(null, schema, table + "$%", null), "TABLE_NAME", "TABLE_TYPE");
            print("columns", md.getColumns(null, schema, table, "%"), "COLUMN_NAME", "TYPE_NAME", "DATA_TYPE",
                  "IS_NULLABLE", "REMARKS");
            print("snapshot-columns", md.getColumns(null, schema, table + "$snapshots", "snapshot%"),
                  "COLUMN_NAME", "TYPE_NAME");
            print("pk", md.getPrimaryKeys(null, schema, table), "COLUMN_NAME", "KEY_SEQ");
            print("sys-functions", md.getFunctions(null, "sys", "%"), "FUNCTION_SCHEM", "FUNCTION_NAME");
            count("all-functions", md.getFunctions(null, null, "%"));
        }
    }
}
