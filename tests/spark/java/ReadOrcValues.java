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
 */
public final class ReadOrcValues {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        for (String file : args) {
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
            case DOUBLE:
                return Double.toString(((DoubleColumnVector) vector).vector[i]);
            case STRING:
            case VARCHAR:
            case CHAR: {
                BytesColumnVector bytes = (BytesColumnVector) vector;
                return new String(bytes.vector[i], bytes.start[i], bytes.length[i], StandardCharsets.UTF_8);
            }
            default:
                return Long.toString(((LongColumnVector) vector).vector[i]);
        }
    }
}
