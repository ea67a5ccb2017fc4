import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.StripeInformation;

/**
 * Test helper: opens ACID event files with Java's orc-core as Hive does and prints what their footer says next to
 * what their stripes hold. An argument is a file, or "file@length" to read only its first length bytes the way Hive
 * reads a streaming file at a flush length (ReaderOptions.maxLength). Per argument it prints
 * "arg TAB meta TAB name=value" for each user metadata entry, "arg TAB lastkeys TAB o,b,r;..." (the last
 * originalTransaction,bucket,rowId of each stripe, read from the rows) and "arg TAB rows TAB n" (rows read).
 */
public final class ReadOrcAcidFooter {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        for (String arg : args) {
            int at = arg.lastIndexOf('@');
            OrcFile.ReaderOptions options = OrcFile.readerOptions(conf);
            String file = arg;
            if (at > 0) {
                file = arg.substring(0, at);
                options = options.maxLength(Long.parseLong(arg.substring(at + 1)));
            }
            try (Reader reader = OrcFile.createReader(new Path(file), options)) {
                for (String name : new TreeSet<>(reader.getMetadataKeys())) {
                    ByteBuffer value = reader.getMetadataValue(name).duplicate();
                    byte[] bytes = new byte[value.remaining()];
                    value.get(bytes);
                    System.out.println(arg + "\tmeta\t" + name + "=" + new String(bytes, StandardCharsets.UTF_8));
                }
                List<Long> ends = new ArrayList<>();
                long end = 0;
                for (StripeInformation stripe : reader.getStripes()) {
                    end += stripe.getNumberOfRows();
                    ends.add(end);
                }
                StringBuilder lastKeys = new StringBuilder();
                VectorizedRowBatch batch = reader.getSchema().createRowBatch();
                long row = 0;
                int stripe = 0;
                try (RecordReader rows = reader.rows(reader.options())) {
                    while (rows.nextBatch(batch)) {
                        for (int r = 0; r < batch.size; r++, row++) {
                            if (stripe < ends.size() && row == ends.get(stripe) - 1) {
                                lastKeys.append(value(batch, 1, r)).append(',').append(value(batch, 2, r)).append(',')
                                    .append(value(batch, 3, r)).append(';');
                                stripe++;
                            }
                        }
                    }
                }
                System.out.println(arg + "\tlastkeys\t" + lastKeys);
                System.out.println(arg + "\trows\t" + row);
            }
        }
    }

    private static long value(VectorizedRowBatch batch, int column, int row) {
        LongColumnVector vector = (LongColumnVector) batch.cols[column];
        return vector.vector[vector.isRepeating ? 0 : row];
    }
}
