// W2 peer: Java Avro (org.apache.avro, from the avro-tools jar) reads an Avro
// file with DataFileReader + GenericDatumReader, reusing the record object as
// Java programs do, and checksums every record as it goes: rows, sum of the
// long fields (sum_id), sum of each double field and of the items of each
// array<double> field. Java Avro has no columnar output: decoding plus the
// walk is load_s (JVM start-up excluded; it is in the wall time).
//
// usage: java -cp bench/bin/java:avro-tools.jar AvroRead PATH   (one JSON line)
import java.io.File;
import java.util.List;
import java.util.Locale;
import org.apache.avro.Schema;
import org.apache.avro.file.DataFileReader;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;

public final class AvroRead {
  /** T for ["null", T] (how nullable columns are written), else the schema itself. */
  static Schema nonNull(Schema s) {
    if (s.getType() != Schema.Type.UNION || s.getTypes().size() != 2) return s;
    for (Schema b : s.getTypes())
      if (b.getType() != Schema.Type.NULL) return b;
    return s;
  }

  public static void main(String[] args) throws Exception {
    long t0 = System.nanoTime();
    long rows = 0, sumId = 0, stringChars = 0;
    double[] sums = null;
    List<Schema.Field> fields = null;
    try (DataFileReader<GenericRecord> reader =
             new DataFileReader<>(new File(args[0]), new GenericDatumReader<GenericRecord>())) {
      fields = reader.getSchema().getFields();
      sums = new double[fields.size()];
      GenericRecord rec = null;
      while (reader.hasNext()) {
        rec = reader.next(rec);
        for (int i = 0; i < fields.size(); i++) {
          Object v = rec.get(i);
          if (v instanceof Long) {
            sumId += (Long) v;
          } else if (v instanceof Double) {
            sums[i] += (Double) v;
          } else if (v instanceof CharSequence) {
            stringChars += ((CharSequence) v).length();
          } else if (v instanceof List) {
            double s = 0;
            for (Object x : (List<?>) v) if (x != null) s += (Double) x;
            sums[i] += s;
          }
        }
        rows++;
      }
    }
    double loadS = (System.nanoTime() - t0) / 1e9;
    StringBuilder out = new StringBuilder();
    out.append(String.format(Locale.ROOT, "{\"tool\": \"java-avro\", \"rows\": %d, \"sum_id\": %d, \"sum_x\": {",
                             rows, sumId));
    boolean first = true;
    for (int i = 0; i < fields.size(); i++) {
      Schema t = nonNull(fields.get(i).schema());
      boolean isDouble = t.getType() == Schema.Type.DOUBLE;
      boolean isList = t.getType() == Schema.Type.ARRAY
          && nonNull(t.getElementType()).getType() == Schema.Type.DOUBLE;
      if (!isDouble && !isList) continue;
      out.append(String.format(Locale.ROOT, "%s\"%s\": %.17g", first ? "" : ", ", fields.get(i).name(), sums[i]));
      first = false;
    }
    out.append(String.format(Locale.ROOT, "}, \"string_chars\": %d, \"load_s\": %.6f, \"verify_s\": 0, \"version\": \"%s\"}",
                             stringChars, loadS, Schema.class.getPackage().getImplementationVersion()));
    System.out.println(out);
  }
}
