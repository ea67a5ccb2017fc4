import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DateColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.StructColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.TimestampColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.TypeDescription;

/**
 * Test helper: reads ORC files with Java's orc-core as Hive 4 does (proleptic Gregorian, UTC timestamps) and prints
 * every date/timestamp value (nested in structs too) as "file TAB column TAB value", after a line
 * "file TAB calendar TAB proleptic|hybrid" saying what the footer declares.
 */
public final class ReadOrcDates {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        for (String file : args) {
            OrcFile.ReaderOptions options = OrcFile.readerOptions(conf)
                .convertToProlepticGregorian(true).useUTCTimestamp(true);
            try (Reader reader = OrcFile.createReader(new Path(file), options)) {
                System.out.println(file + "\tcalendar\t" + (reader.writerUsedProlepticGregorian() ? "proleptic" : "hybrid"));
                TypeDescription schema = reader.getSchema();
                VectorizedRowBatch batch = schema.createRowBatch();
                try (RecordReader rows = reader.rows(reader.options())) {
                    while (rows.nextBatch(batch)) {
                        List<String> names = schema.getFieldNames();
                        for (int c = 0; c < batch.cols.length; c++) {
                            print(file, names.get(c), schema.getChildren().get(c), batch.cols[c], batch.size);
                        }
                    }
                }
            }
        }
    }

    private static void print(String file, String name, TypeDescription type, ColumnVector vector, int size) {
        if (vector instanceof StructColumnVector) {
            StructColumnVector struct = (StructColumnVector) vector;
            for (int c = 0; c < struct.fields.length; c++) {
                print(file, name + "." + type.getFieldNames().get(c), type.getChildren().get(c), struct.fields[c], size);
            }
            return;
        }
        for (int r = 0; r < size; r++) {
            int i = vector.isRepeating ? 0 : r;
            if (!vector.noNulls && vector.isNull[i]) {
                continue;
            }
            String value;
            if (vector instanceof DateColumnVector) {
                value = LocalDate.ofEpochDay(((DateColumnVector) vector).vector[i]).toString();
            } else if (vector instanceof TimestampColumnVector) {
                TimestampColumnVector ts = (TimestampColumnVector) vector;
                Instant instant = Instant.ofEpochSecond(Math.floorDiv(ts.time[i], 1000L), ts.nanos[i]);
                value = instant.atOffset(ZoneOffset.UTC).toLocalDateTime().toString();
            } else {
                return;
            }
            System.out.println(file + "\t" + name + "\t" + value);
        }
    }
}
