/*
 * Converts between Paimon's internal row values and JSON for the Java Paimon oracle.
 *
 * One job: map a value of a Paimon DataType to a JSON-friendly Java object (for results) and a
 * JSON value back to Paimon's internal representation (for writes). The encodings are the ones
 * tests/compat/java_oracle.py decodes:
 *   strings, booleans, integers, floats  -> themselves (FLOAT widened exactly to double)
 *   DECIMAL                              -> plain string ("12.30")
 *   DATE                                 -> ISO date string ("2024-01-02")
 *   TIME                                 -> milliseconds of the day (int)
 *   TIMESTAMP / TIMESTAMP_LTZ            -> ISO local date-time string, microsecond precision
 *   BINARY / VARBINARY                   -> base64 string
 *   ARRAY -> list, MAP -> list of [key, value] pairs, ROW -> list   (reads only)
 * A row to write is a list of values in column order or an object by column name.
 */

import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;

import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

final class RowCodec {

    private static final DateTimeFormatter ISO_MICROS =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS");

    private RowCodec() {}

    /** One row of {@code type} as a list of JSON-friendly values, in field order. */
    static List<Object> toJson(InternalRow row, RowType type) {
        List<Object> out = new ArrayList<>(type.getFieldCount());
        for (int i = 0; i < type.getFieldCount(); i++) {
            DataType fieldType = type.getTypeAt(i);
            out.add(row.isNullAt(i) ? null : valueToJson(InternalRow.createFieldGetter(fieldType, i)
                    .getFieldOrNull(row), fieldType));
        }
        return out;
    }

    private static Object valueToJson(Object value, DataType type) {
        if (value == null) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case CHAR:
            case VARCHAR:
                return value.toString();
            case BOOLEAN:
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case BIGINT:
            case DOUBLE:
            case TIME_WITHOUT_TIME_ZONE:
                return value;
            case FLOAT:  // widened exactly, as Python widens a float32
                return ((Float) value).doubleValue();
            case DECIMAL:
                return ((Decimal) value).toBigDecimal().toPlainString();
            case DATE:
                return LocalDate.ofEpochDay((Integer) value).toString();
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return ((Timestamp) value).toLocalDateTime().format(ISO_MICROS);
            case BINARY:
            case VARBINARY:
                return Base64.getEncoder().encodeToString((byte[]) value);
            case ARRAY: {
                InternalArray array = (InternalArray) value;
                DataType element = ((ArrayType) type).getElementType();
                InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
                List<Object> out = new ArrayList<>(array.size());
                for (int i = 0; i < array.size(); i++) {
                    out.add(valueToJson(getter.getElementOrNull(array, i), element));
                }
                return out;
            }
            case MAP: {
                InternalMap map = (InternalMap) value;
                MapType mapType = (MapType) type;
                @SuppressWarnings("unchecked")
                List<Object> keys = (List<Object>) valueToJson(map.keyArray(),
                        new ArrayType(mapType.getKeyType()));
                @SuppressWarnings("unchecked")
                List<Object> values = (List<Object>) valueToJson(map.valueArray(),
                        new ArrayType(mapType.getValueType()));
                List<Object> out = new ArrayList<>(keys.size());
                for (int i = 0; i < keys.size(); i++) {
                    out.add(Arrays.asList(keys.get(i), values.get(i)));
                }
                return out;
            }
            case ROW:
                return toJson((InternalRow) value, (RowType) type);
            default:
                throw new IllegalArgumentException("the oracle cannot read type " + type);
        }
    }

    /** A row of {@code type} from a JSON array of values (encodings as above). */
    static GenericRow fromJson(JsonNode values, RowType type, String rowKind) {
        GenericRow row = new GenericRow(RowKind.fromShortString(rowKind), type.getFieldCount());
        if (values.isObject()) {  // by column name; absent columns are null
            values.fieldNames().forEachRemaining(name -> {
                if (!type.containsField(name)) {
                    throw new IllegalArgumentException("row " + values + " names column " + name
                            + ", not one of " + type.getFieldNames());
                }
            });
            for (int i = 0; i < type.getFieldCount(); i++) {
                row.setField(i, valueFromJson(values.get(type.getFields().get(i).name()),
                        type.getTypeAt(i)));
            }
            return row;
        }
        if (!values.isArray() || values.size() != type.getFieldCount()) {
            throw new IllegalArgumentException("row " + values + " must be a list of "
                    + type.getFieldCount() + " values for " + type.getFieldNames());
        }
        for (int i = 0; i < type.getFieldCount(); i++) {
            row.setField(i, valueFromJson(values.get(i), type.getTypeAt(i)));
        }
        return row;
    }

    static Object valueFromJson(JsonNode node, DataType type) {
        if (node == null || node.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(node.asText());
            case BOOLEAN:
                return node.asBoolean();
            case TINYINT:
                return (byte) node.asInt();
            case SMALLINT:
                return (short) node.asInt();
            case INTEGER:
            case TIME_WITHOUT_TIME_ZONE:
                return node.asInt();
            case BIGINT:
                return node.asLong();
            case FLOAT:
                return (float) node.asDouble();
            case DOUBLE:
                return node.asDouble();
            case DECIMAL: {
                DecimalType decimal = (DecimalType) type;
                return Decimal.fromBigDecimal(new BigDecimal(node.asText()), decimal.getPrecision(),
                        decimal.getScale());
            }
            case DATE:
                return (int) LocalDate.parse(node.asText()).toEpochDay();
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromLocalDateTime(LocalDateTime.parse(node.asText()));
            case BINARY:
            case VARBINARY:
                return Base64.getDecoder().decode(node.asText());
            default:
                throw new IllegalArgumentException("the oracle cannot write type " + type);
        }
    }
}
