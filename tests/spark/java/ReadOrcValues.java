import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DateColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DecimalColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DoubleColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ListColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.MapColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.StructColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.TimestampColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.TypeDescription;

/**
 * Test helper: reads ORC files with Java's orc-core as Hive 4 does (proleptic Gregorian, UTC timestamps) and prints,
 * per file, "file TAB calendar TAB proleptic|hybrid" and "file TAB schema TAB struct<..>" (the file's ORC types),
 * then per row "file TAB keys TAB row": for an ACID event file keys =
 * "operation,originalTransaction,bucket,rowId,currentTransaction" and row = the row struct, for a plain file keys = "-"
 * and row = the whole record. Values render as tests/spark/test_orc_calendar.py's render(): structs
 * {a=..,b=..}, lists [..], maps map(k:v,..), dates ISO, timestamps epochSecond.nanos, decimals at their scale.
 * With "--cells" first, every value is printed on its own, "file TAB keys TAB rowNumber TAB keys" and per column of
 * the row "file TAB cell TAB rowNumber TAB column TAB value" (a NULL ACID row: column "*"), strings quoted with \ " TAB
 * and newline escaped, binary as 0x-hex, floats as the 0x-hex of their double's bits (NaN as NaN), as
 * tests/type_matrix.py's cell() renders values.
 */
public final class ReadOrcValues {
    private static boolean cells;

    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        int first = 0;
        if (args.length > 0 && args[0].equals("--cells")) {
            cells = true;
            first = 1;
        }
        long rowNumber = 0;
        for (String file : java.util.Arrays.copyOfRange(args, first, args.length)) {
            rowNumber = 0;
            OrcFile.ReaderOptions options = OrcFile.readerOptions(conf)
                .convertToProlepticGregorian(true).useUTCTimestamp(true);
            try (Reader reader = OrcFile.createReader(new Path(file), options)) {
                System.out.println(file + "\tcalendar\t" + (reader.writerUsedProlepticGregorian() ? "proleptic" : "hybrid"));
                TypeDescription schema = reader.getSchema();
                System.out.println(file + "\tschema\t" + schema);
                List<String> names = schema.getFieldNames();
                boolean acid = names.size() == 6 && names.get(0).equalsIgnoreCase("operation");
                VectorizedRowBatch batch = schema.createRowBatch();
                try (RecordReader rows = reader.rows(reader.options())) {
                    while (rows.nextBatch(batch)) {
                        for (int r = 0; r < batch.size; r++) {
                            if (cells) {
                                printCells(file, schema, batch, r, acid, rowNumber++);
                                continue;
                            }
                            String keys = "-";
                            String row;
                            if (acid) {
                                List<String> parts = new ArrayList<>();
                                for (int c = 0; c < 5; c++) {
                                    parts.add(render(schema.getChildren().get(c), batch.cols[c], r));
                                }
                                keys = String.join(",", parts);
                                row = render(schema.getChildren().get(5), batch.cols[5], r);
                            } else {
                                StructColumnVector all = new StructColumnVector(batch.size, batch.cols);
                                row = render(schema, all, r);
                            }
                            System.out.println(file + "\t" + keys + "\t" + row);
                        }
                    }
                }
            }
        }
    }

    private static void printCells(String file, TypeDescription schema, VectorizedRowBatch batch, int r, boolean acid,
                                   long number) {
        TypeDescription rowType = schema;
        ColumnVector[] columns = batch.cols;
        if (acid) {
            List<String> parts = new ArrayList<>();
            for (int c = 0; c < 5; c++) {
                parts.add(render(schema.getChildren().get(c), batch.cols[c], r));
            }
            System.out.println(file + "\tkeys\t" + number + "\t" + String.join(",", parts));
            rowType = schema.getChildren().get(5);
            ColumnVector row = batch.cols[5];
            int i = row.isRepeating ? 0 : r;
            if (!row.noNulls && row.isNull[i]) {
                System.out.println(file + "\tcell\t" + number + "\t*\tnull");
                return;
            }
            columns = ((StructColumnVector) row).fields;
        }
        for (int c = 0; c < columns.length; c++) {
            System.out.println(file + "\tcell\t" + number + "\t" + rowType.getFieldNames().get(c) + "\t"
                               + render(rowType.getChildren().get(c), columns[c], r));
        }
    }

    private static String quoted(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\t", "\\t").replace("\n", "\\n") + "\"";
    }

    private static String render(TypeDescription type, ColumnVector vector, int row) {
        int i = vector.isRepeating ? 0 : row;
        if (!vector.noNulls && vector.isNull[i]) {
            return "null";
        }
        switch (type.getCategory()) {
            case STRUCT: {
                StructColumnVector struct = (StructColumnVector) vector;
                List<String> parts = new ArrayList<>();
                for (int c = 0; c < struct.fields.length; c++) {
                    parts.add(type.getFieldNames().get(c) + "=" + render(type.getChildren().get(c), struct.fields[c], i));
                }
                return "{" + String.join(",", parts) + "}";
            }
            case LIST: {
                ListColumnVector list = (ListColumnVector) vector;
                List<String> parts = new ArrayList<>();
                for (long k = list.offsets[i]; k < list.offsets[i] + list.lengths[i]; k++) {
                    parts.add(render(type.getChildren().get(0), list.child, (int) k));
                }
                return "[" + String.join(",", parts) + "]";
            }
            case MAP: {
                MapColumnVector map = (MapColumnVector) vector;
                List<String> parts = new ArrayList<>();
                for (long k = map.offsets[i]; k < map.offsets[i] + map.lengths[i]; k++) {
                    parts.add(render(type.getChildren().get(0), map.keys, (int) k) + ":"
                              + render(type.getChildren().get(1), map.values, (int) k));
                }
                return "map(" + String.join(",", parts) + ")";
            }
            case DATE:
                return LocalDate.ofEpochDay(((DateColumnVector) vector).vector[i]).toString();
            case TIMESTAMP: {
                TimestampColumnVector ts = (TimestampColumnVector) vector;
                return Math.floorDiv(ts.time[i], 1000L) + "." + String.format("%09d", ts.nanos[i]);
            }
            case DECIMAL: {
                BigDecimal value = ((DecimalColumnVector) vector).vector[i].getHiveDecimal().bigDecimalValue();
                return value.setScale(type.getScale()).toPlainString();
            }
            case FLOAT:
            case DOUBLE: {
                double value = ((DoubleColumnVector) vector).vector[i];
                if (!cells) {
                    return Double.toString(value);
                }
                return Double.isNaN(value) ? "NaN" : String.format("0x%016x", Double.doubleToRawLongBits(value));
            }
            case STRING:
            case VARCHAR:
            case CHAR: {
                BytesColumnVector bytes = (BytesColumnVector) vector;
                String text = new String(bytes.vector[i], bytes.start[i], bytes.length[i], StandardCharsets.UTF_8);
                return cells ? quoted(text) : text;
            }
            case BINARY: {
                BytesColumnVector bytes = (BytesColumnVector) vector;
                StringBuilder hex = new StringBuilder("0x");
                for (int b = 0; b < bytes.length[i]; b++) {
                    hex.append(String.format("%02x", bytes.vector[i][bytes.start[i] + b] & 0xff));
                }
                return hex.toString();
            }
            default:
                return Long.toString(((LongColumnVector) vector).vector[i]);
        }
    }
}
