package hudirag.rules;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The product row rules: a JSON line or a source row of strings in, the typed and cleaned
 * table columns and the reasons a row is rejected out (spark_jobs/validation.py documents
 * the rules and registers these as Spark SQL functions).
 *
 * <p>JVM code rather than Spark column expressions because the expressions cost twice what
 * a plain bulk insert costs (BENCHMARKS.md, issue 12): Spark 3.5 has no generated code for
 * from_json, and one row's rules were ~60 expressions. Here a row is one pass.
 *
 * <p>The columns and their rules come from app/core/catalog.py (see {@link #ProductRules}),
 * so this file names no column. Where a rule is not obvious, the comment says which Spark
 * behaviour it keeps: the rules used to be Spark expressions, and rows keep the results
 * (and the reasons) they had then, except where that result only mirrored how the
 * expressions were built (docs/decisions/product-rules.md lists the quirks kept and
 * dropped; ProductRulesTest pins them).
 */
public final class ProductRules implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Why a source line is not a record (the quarantine's only reason for it). */
  public static final String NOT_JSON_OBJECT = "not a JSON object";

  private enum Rule {
    KEY,
    EPOCH_MILLIS,
    TEXT,
    AMOUNT
  }

  private static final String[] DELETE_OPS = {"delete", "d"};
  private static final String[] UPSERT_OPS = {"upsert", "u", "insert", "i", "update", "c", "r"};

  // Java's regular expressions, as Spark's rlike/regexp_replace ran them.
  private static final Pattern BLANK = Pattern.compile("(?U)^\\s*$");
  private static final Pattern OPENS_CONTAINER = Pattern.compile("^\\s*[\\[{]");
  private static final Pattern INTEGRAL = Pattern.compile("^\\s*[+-]?\\d+(\\.0*)?\\s*$");
  private static final Pattern LEADING_DIGITS = Pattern.compile("^\\s*([+-]?\\d+)");
  private static final Pattern SPACE_LIKE = Pattern.compile("[\\t\\n\\r]+");
  private static final Pattern CONTROL =
      Pattern.compile("[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f]");
  // (?U): Unicode whitespace, as Python's str.strip() trims it.
  private static final Pattern EDGE_SPACE = Pattern.compile("(?U)^\\s+|\\s+$");

  private final String[] names;
  private final Rule[] rules;
  private final boolean[] required;
  // Spelling (a column's name or alias, normalized) -> slot: 2 * column for its own name,
  // 2 * column + 1 for an alias; opSlot for `op`/`operation`.
  private final Map<String, Integer> spellings = new HashMap<>();
  private final int opSlot;
  // The reasons in the order they are reported: key, must be text, empty, amount, time.
  private final int[][] phases;
  private transient JsonFactory factory;

  /**
   * @param spec one line per table column, in table order: name, rule (key, epoch_millis,
   *     text, amount), "required" or "optional", then its aliases; tab-separated.
   * @param opNames the names of an `op` column, tab-separated; the first in a row wins.
   */
  public ProductRules(String spec, String opNames) {
    String[] lines = spec.trim().split("\n");
    names = new String[lines.length];
    rules = new Rule[lines.length];
    required = new boolean[lines.length];
    for (int c = 0; c < lines.length; c++) {
      String[] fields = lines[c].split("\t", -1);
      names[c] = fields[0];
      rules[c] = Rule.valueOf(fields[1].toUpperCase(Locale.ROOT));
      required[c] = fields[2].equals("required");
      spellings.put(fields[0], 2 * c);
      for (int a = 3; a < fields.length; a++) {
        spellings.putIfAbsent(fields[a], 2 * c + 1);
      }
    }
    opSlot = 2 * lines.length;
    for (String op : opNames.split("\t")) {
      spellings.putIfAbsent(op, opSlot);
    }
    phases = new int[][] {
      columnsWith(Rule.KEY), columnsWith(Rule.TEXT), columnsWith(Rule.TEXT),
      columnsWith(Rule.AMOUNT), columnsWith(Rule.EPOCH_MILLIS)
    };
  }

  private int[] columnsWith(Rule rule) {
    return IntStream.range(0, rules.length).filter(c -> rules[c] == rule).toArray();
  }

  /** The source row of a JSON line: one value per column, then `op`, then why it is malformed. */
  public String[] sourceRow(String line) {
    String[] row = new String[names.length + 2];
    // Each column's value: at its own name's first key, else (when that is missing or
    // null) at the first key that is one of its aliases.
    int[] own = new int[names.length];
    int[] alias = new int[names.length];
    java.util.Arrays.fill(own, -1);
    java.util.Arrays.fill(alias, -1);
    int op = -1;
    List<String> values = new ArrayList<>(names.length + 2);
    try (JsonParser parser = factory().createParser(line)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        row[names.length + 1] = NOT_JSON_OBJECT;
        return row;
      }
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String key = parser.currentName();
        parser.nextToken();
        int position = values.size();
        values.add(text(parser));
        Integer slot = spellings.get(key);
        if (slot == null) {
          slot = spellings.get(normalize(key));
        }
        if (slot == null) {
          continue;
        }
        if (slot == opSlot) {
          op = op < 0 ? position : op;
        } else if (slot % 2 == 0) {
          own[slot / 2] = own[slot / 2] < 0 ? position : own[slot / 2];
        } else {
          alias[slot / 2] = alias[slot / 2] < 0 ? position : alias[slot / 2];
        }
      }
      if (parser.currentToken() != JsonToken.END_OBJECT) {
        throw new IOException("unterminated object");
      }
    } catch (IOException | RuntimeException e) {
      // Spark's from_json gave null for any line it could not parse.
      row = new String[names.length + 2];
      row[names.length + 1] = NOT_JSON_OBJECT;
      return row;
    }
    for (int c = 0; c < names.length; c++) {
      String value = own[c] >= 0 ? values.get(own[c]) : null;
      row[c] = value == null && alias[c] >= 0 ? values.get(alias[c]) : value;
    }
    row[names.length] = op >= 0 ? values.get(op) : null;
    return row;
  }

  /**
   * A JSON value as from_json(map<string,string>) gave it: strings as they are, any other
   * value as JSON text.
   */
  private String text(JsonParser parser) throws IOException {
    JsonToken token = parser.currentToken();
    if (token == JsonToken.VALUE_STRING) {
      return parser.getText();
    }
    if (token == JsonToken.VALUE_NULL) {
      return null;
    }
    if (token == JsonToken.VALUE_NUMBER_INT) {
      String number = parser.getText();
      return number.equals("-0") ? "0" : number;
    }
    if (token == JsonToken.VALUE_NUMBER_FLOAT) {
      // Jackson's generator writes a finite double as Double.toString: 12.50 -> "12.5",
      // 1e3 -> "1000.0". NaN, the infinities and an overflow (1e400) it writes quoted.
      double number = parser.getDoubleValue();
      if (!Double.isNaN(number) && !Double.isInfinite(number)) {
        return Double.toString(number);
      }
    }
    if (token == JsonToken.VALUE_TRUE || token == JsonToken.VALUE_FALSE) {
      return token.asString();
    }
    // Objects, arrays, NaN and infinities: copied as JSON text, as Spark copies them.
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (JsonGenerator generator = factory().createGenerator(out, JsonEncoding.UTF8)) {
      generator.copyCurrentStructure(parser);
    }
    return new String(out.toByteArray(), StandardCharsets.UTF_8);
  }

  /** What input column names are compared as: trimmed of spaces, lowercase, " " and "-" as "_". */
  private static String normalize(String key) {
    return sparkTrim(key).toLowerCase(Locale.ROOT).replace(' ', '_').replace('-', '_');
  }

  // Spark's JSON options by default (JSONOptions.buildJsonFactory), which from_json used.
  private JsonFactory factory() {
    if (factory == null) {
      factory = new JsonFactoryBuilder()
          .configure(JsonReadFeature.ALLOW_SINGLE_QUOTES, true)
          .configure(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS, true)
          .streamReadConstraints(StreamReadConstraints.builder()
              .maxNumberLength(Integer.MAX_VALUE)
              .maxStringLength(Integer.MAX_VALUE)
              .build())
          .build();
    }
    return factory;
  }

  /**
   * The checked row: each column typed and cleaned (Long, String or Double), then
   * ts_defaulted, is_delete and the reasons (empty when the row is valid).
   *
   * @param raw one value per column, then `op`, then why the row is malformed (or null).
   * @param ingestionTs the time (epoch millis) of a row that brings none.
   */
  public Object[] check(String[] raw, long ingestionTs) {
    int n = names.length;
    Object[] out = new Object[n + 3];
    String malformed = raw[n + 1];
    String op = raw[n] == null ? null : sparkTrim(raw[n]).toLowerCase(Locale.ROOT);
    boolean isDelete = op != null && isIn(op, DELETE_OPS);
    String opReason = op != null && !isDelete && !isIn(op, UPSERT_OPS)
        ? "op must be upsert or delete: " + quoted(raw[n]) : null;
    String[][] reasons = new String[5][];  // per phase, per column of that phase
    boolean tsDefaulted = false;
    boolean tsSeen = false;
    for (int p = 0; p < phases.length; p++) {
      reasons[p] = new String[phases[p].length];
    }
    for (int c = 0; c < n; c++) {
      String value = raw[c];
      boolean missing = missing(value);
      switch (rules[c]) {
        case KEY: {
          Long number = integral(value);
          out[c] = number;
          reasons[0][indexIn(phases[0], c)] = missing ? names[c] + " is missing"
              : number == null ? names[c] + " is not an integer: " + quoted(value) : null;
          break;
        }
        case EPOCH_MILLIS: {
          Long number = integral(value);
          // Null only when missing (or invalid, and then the row is rejected).
          out[c] = number == null ? (Long) ingestionTs : number;
          boolean bad = !missing && (number == null || number < 0);
          reasons[4][indexIn(phases[4], c)] =
              bad ? names[c] + " is not epoch millis: " + quoted(value) : null;
          if (!tsSeen) {
            tsDefaulted = missing;
            tsSeen = true;
          }
          break;
        }
        case TEXT: {
          boolean container = value != null && isContainer(value);
          String cleaned = value == null ? null : cleanText(value);
          String text = !container && cleaned != null && !cleaned.isEmpty() ? cleaned : null;
          out[c] = text;
          int at = indexIn(phases[1], c);
          reasons[1][at] = container ? names[c] + " must be text" : null;
          boolean empty = required[c] && !container && text == null;
          reasons[2][at] = empty ? names[c] + " is empty" : null;
          break;
        }
        default: {
          Double number = value == null ? null : toDouble(value);
          out[c] = missing ? null : number;
          String reason = null;
          if (missing) {
            reason = null;
          } else if (number == null && notNumber(value)) {
            reason = names[c] + " must be a number";
          } else if (number == null) {
            reason = names[c] + " is not a number: " + quoted(value);
          } else if (number.isNaN() || number.isInfinite()) {
            reason = names[c] + " must be finite";
          } else if (number < 0) {
            reason = names[c] + " must be >= 0";
          }
          reasons[3][indexIn(phases[3], c)] = reason;
        }
      }
    }
    List<String> found = new ArrayList<>(2);
    if (malformed != null) {
      found.add(malformed);
    } else {
      for (int p = 0; p < phases.length; p++) {
        // A delete names a row by id (and orders by ts); its other columns do not matter.
        if (isDelete && p != 0 && p != 4) {
          continue;
        }
        for (String reason : reasons[p]) {
          if (reason != null) {
            found.add(reason);
          }
        }
      }
      if (opReason != null) {
        found.add(opReason);
      }
    }
    out[n] = tsDefaulted;
    out[n + 1] = isDelete;
    out[n + 2] = found.toArray(new String[0]);
    return out;
  }

  private static int indexIn(int[] columns, int column) {
    for (int i = 0; i < columns.length; i++) {
      if (columns[i] == column) {
        return i;
      }
    }
    throw new IllegalStateException("column not in its phase");
  }

  private static boolean isIn(String value, String[] choices) {
    for (String choice : choices) {
      if (choice.equals(value)) {
        return true;
      }
    }
    return false;
  }

  /** Spark's trim: spaces only, at both ends. */
  private static String sparkTrim(String value) {
    int start = 0;
    int end = value.length();
    while (start < end && value.charAt(start) == ' ') {
      start++;
    }
    while (end > start && value.charAt(end - 1) == ' ') {
      end--;
    }
    return value.substring(start, end);
  }

  /** The value as the reasons show it: its first 40 characters in single quotes. */
  private static String quoted(String value) {
    int end = value.codePointCount(0, value.length()) > 40
        ? value.offsetByCodePoints(0, 40) : value.length();
    return "'" + value.substring(0, end) + "'";
  }

  /**
   * The first character is printable ASCII other than a space, so the value has a
   * non-space character and is not a container unless it opens with [ or {: most values,
   * which skip the regular expressions.
   */
  private static boolean printableStart(String value) {
    return !value.isEmpty() && value.charAt(0) >= '!' && value.charAt(0) < 0x7f;
  }

  private static boolean missing(String value) {
    return value == null || (!printableStart(value) && BLANK.matcher(value).find());
  }

  /** A JSON object or array (how Spark read a nested value into a STRING column). */
  private boolean isContainer(String value) {
    boolean opens = value.startsWith("[") || value.startsWith("{");
    if (printableStart(value) && !opens) {
      return false;
    }
    return OPENS_CONTAINER.matcher(value).find() && jsonArrayLength("[" + value + "]");
  }

  /**
   * Spark's json_array_length(text) is not null: the text opens a JSON array whose
   * elements parse up to its closing bracket.
   */
  private boolean jsonArrayLength(String text) {
    try (JsonParser parser = new JsonFactory().createParser(text)) {
      if (parser.nextToken() != JsonToken.START_ARRAY) {
        return false;
      }
      while (parser.nextToken() != JsonToken.END_ARRAY) {
        parser.skipChildren();
      }
      return true;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** BIGINT or null: digits only (an integral decimal's zeros dropped), within range. */
  private static Long integral(String value) {
    if (value == null) {
      return null;
    }
    if (!value.isEmpty() && value.length() <= 20) {
      try {
        long number = Long.parseLong(value);
        if (Long.toString(number).equals(value)) {
          return number;  // an integer as Spark writes it: nearly every id and ts
        }
      } catch (NumberFormatException e) {
        // not in canonical form: the general rule below
      }
    }
    if (!INTEGRAL.matcher(value).find()) {
      return null;
    }
    Matcher digits = LEADING_DIGITS.matcher(value);
    if (!digits.find()) {
      return null;
    }
    try {
      return Long.parseLong(digits.group(1));
    } catch (NumberFormatException e) {
      return null;  // out of range: not an integer, as a non-ANSI cast gave null
    }
  }

  /** Spark 3.5's cast to DOUBLE: Java's parser, then inf/infinity/nan in any case. */
  private static Double toDouble(String value) {
    try {
      return Double.valueOf(value);
    } catch (NumberFormatException e) {
      // Scala's trim, as Cast.processFloatingPointSpecialLiterals: characters <= ' '.
      switch (value.trim().toLowerCase(Locale.ROOT)) {
        case "inf":
        case "+inf":
        case "infinity":
        case "+infinity":
          return Double.POSITIVE_INFINITY;
        case "-inf":
        case "-infinity":
          return Double.NEGATIVE_INFINITY;
        case "nan":
          return Double.NaN;
        default:
          return null;
      }
    }
  }

  /** A value that is not a number because it is a boolean or a container. */
  private boolean notNumber(String value) {
    String word = sparkTrim(value).toLowerCase(Locale.ROOT);
    return word.equals("true") || word.equals("false") || isContainer(value);
  }

  /**
   * Trimmed text without control characters (newlines and tabs become spaces). Printable
   * ASCII (most text) only needs its spaces trimmed.
   */
  static String cleanText(String value) {
    boolean printable = true;
    for (int i = 0; i < value.length() && printable; i++) {
      char ch = value.charAt(i);
      printable = ch >= 0x20 && ch <= 0x7e;
    }
    if (printable) {
      return sparkTrim(value);
    }
    String spaced = SPACE_LIKE.matcher(value).replaceAll(" ");
    return EDGE_SPACE.matcher(CONTROL.matcher(spaced).replaceAll("")).replaceAll("");
  }

  /**
   * check_product_json(line, ingestion_ts): a JSON line's checked row, or null for a
   * blank line (dropped).
   *
   * <p>The ingestion time comes as a string: Spark writes a long literal into its
   * generated code, so each run's time would make the code new (compiled again, and run
   * interpreted until the JIT compiled it again), where a string literal is passed by
   * reference and every run reuses the code.
   */
  public UDF2<String, String, Row> jsonLineFunction() {
    return (line, ingestionTs) -> {
      // Spark's trim (spaces only): a line of tabs is kept, as "not a JSON object".
      if (line == null || sparkTrim(line).isEmpty()) {
        return null;
      }
      return RowFactory.create(check(sourceRow(line), Long.parseLong(ingestionTs)));
    };
  }

  /** check_product(struct(columns..., op, malformed), ingestion_ts): a source row's checked row. */
  public UDF2<Row, String, Row> sourceRowFunction() {
    return (row, ingestionTs) -> {
      String[] raw = new String[row.length()];
      for (int i = 0; i < raw.length; i++) {
        raw[i] = row.isNullAt(i) ? null : row.getString(i);
      }
      return RowFactory.create(check(raw, Long.parseLong(ingestionTs)));
    };
  }
}
