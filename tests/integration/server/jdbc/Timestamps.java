import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;

/**
 * Runs statements through Hive's JDBC driver and prints what a JDBC tool gets for the last one's
 * result: per column {@code column<TAB>name<TAB>getColumnTypeName<TAB>getColumnType}, then per row
 * {@code row} and each value as {@code getObject} gives it ({@code class=value}), so the
 * dyntable-server tests see how the driver types and converts timestamps.
 * Arguments: JDBC URL, user, password, statements (the last one a query).
 */
public final class Timestamps {
    public static void main(String[] args) throws Exception {
        Class.forName("org.apache.hive.jdbc.HiveDriver");
        try (Connection conn = DriverManager.getConnection(args[0], args[1], args[2]);
             Statement st = conn.createStatement()) {
            for (int i = 3; i < args.length - 1; i++) {
                st.execute(args[i]);
            }
            try (ResultSet rs = st.executeQuery(args[args.length - 1])) {
                ResultSetMetaData md = rs.getMetaData();
                for (int c = 1; c <= md.getColumnCount(); c++) {
                    System.out.println("column\t" + md.getColumnName(c) + "\t" + md.getColumnTypeName(c) + "\t"
                                       + md.getColumnType(c));
                }
                while (rs.next()) {
                    StringBuilder line = new StringBuilder("row");
                    for (int c = 1; c <= md.getColumnCount(); c++) {
                        Object value = rs.getObject(c);
                        line.append('\t').append(value == null ? "null" : value.getClass().getName() + "=" + value);
                    }
                    System.out.println(line);
                }
            }
        }
    }
}
