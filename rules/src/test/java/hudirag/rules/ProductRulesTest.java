package hudirag.rules;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link ProductRules#check} on each rule (valid rows, every reason, the boundaries) and
 * {@link ProductRules#sourceRow} on the JSON forms and key spellings, without Spark. The
 * Python tests (tests/spark_jobs/test_product_validation.py) run the same rules through
 * Spark's readers.
 */
class ProductRulesTest {
  // The catalog's columns as spark_jobs/validation.py passes them (app/core/catalog.py).
  static final String SPEC = String.join("\n",
      "id\tkey\trequired\tproduct_id\tproductid",
      "ts\tepoch_millis\toptional\tupdated_ts",
      "name\ttext\trequired\ttitle\tproduct_name",
      "description\ttext\toptional\tdesc\tdetails",
      "category\ttext\toptional\tproduct_category",
      "brand\ttext\toptional\tmanufacturer",
      "price\tamount\toptional\tunit_price\tprice_usd");
  static final List<String> COLUMNS =
      Arrays.asList("id", "ts", "name", "description", "category", "brand", "price");
  static final int N = COLUMNS.size();
  static final int OP = N;
  static final int MALFORMED = N + 1;
  static final long NOW = 1_800_000_000_000L;

  final ProductRules rules = new ProductRules(SPEC, "op\toperation");

  /** A source row from column/value pairs; "op" and "malformed" fill the last two slots. */
  static String[] raw(String... pairs) {
    String[] row = new String[N + 2];
    for (int i = 0; i < pairs.length; i += 2) {
      int at = pairs[i].equals("op") ? OP
          : pairs[i].equals("malformed") ? MALFORMED : COLUMNS.indexOf(pairs[i]);
      row[at] = pairs[i + 1];
    }
    return row;
  }

  Object[] check(String... pairs) {
    return rules.check(raw(pairs), NOW);
  }

  static String[] reasons(Object[] checked) {
    return (String[]) checked[N + 2];
  }

  static Object column(Object[] checked, String name) {
    return checked[COLUMNS.indexOf(name)];
  }

  static void assertValid(Object[] checked) {
    assertArrayEquals(new String[0], reasons(checked));
  }

  /** A valid row with one column changed. */
  Object[] withValue(String column, String value) {
    Map<String, String> row = new LinkedHashMap<>();
    row.put("id", "1");
    row.put("name", "Mug");
    row.put(column, value);
    String[] pairs = new String[2 * row.size()];
    int i = 0;
    for (Map.Entry<String, String> e : row.entrySet()) {
      pairs[i++] = e.getKey();
      pairs[i++] = e.getValue();
    }
    return check(pairs);
  }

  // --- valid rows ------------------------------------------------------------------

  @Test
  void aValidRowIsTypedAndCleaned() {
    Object[] out = check("id", "7", "name", "  Tea\u0000 Tin\n", "description", "Loose\tleaf. ",
        "brand", "  ", "price", "4.5");
    assertValid(out);
    assertArrayEquals(new Object[] {7L, NOW, "Tea Tin", "Loose leaf.", null, null, 4.5},
        Arrays.copyOf(out, N));
    assertEquals(true, out[N]);  // ts_defaulted
    assertEquals(false, out[N + 1]);  // is_delete
  }

  @Test
  void aRowWithItsOwnTsIsNotDefaulted() {
    Object[] out = check("id", "1", "name", "Mug", "ts", "123");
    assertValid(out);
    assertEquals(123L, column(out, "ts"));
    assertEquals(false, out[N]);
  }

  // --- key -------------------------------------------------------------------------

  @ParameterizedTest
  @ValueSource(strings = {"12", " 12 ", "12.0", "12.", "+12", "012", "12.000"})
  void integralKeysPass(String value) {
    Object[] out = withValue("id", value);
    assertValid(out);
    assertEquals(12L, column(out, "id"));
  }

  @Test
  void keysAtTheEdgesOfBigint() {
    assertEquals(Long.MAX_VALUE, column(withValue("id", "9223372036854775807"), "id"));
    assertEquals(Long.MIN_VALUE, column(withValue("id", "-9223372036854775808"), "id"));
    assertEquals(0L, column(withValue("id", "-0"), "id"));
    assertArrayEquals(new String[] {"id is not an integer: '9223372036854775808'"},
        reasons(withValue("id", "9223372036854775808")));
  }

  @ParameterizedTest
  @ValueSource(strings = {"12.5", "abc", "1e3", "true", "+", "-", "[1]", "1 2", "0x10", "１２"})
  void otherKeysAreNotIntegers(String value) {
    assertArrayEquals(new String[] {"id is not an integer: '" + value + "'"},
        reasons(withValue("id", value)));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "\u00a0", "\t\n", "\u2003"})
  void blankKeysAreMissing(String value) {
    assertArrayEquals(new String[] {"id is missing"}, reasons(withValue("id", value)));
    assertArrayEquals(new String[] {"id is missing"}, reasons(check("name", "Mug")));
  }

  // --- epoch_millis ----------------------------------------------------------------

  @Test
  void tsIsEpochMillisFromZero() {
    assertEquals(0L, column(withValue("ts", "0"), "ts"));
    assertArrayEquals(new String[] {"ts is not epoch millis: '-1'"},
        reasons(withValue("ts", "-1")));
    assertArrayEquals(new String[] {"ts is not epoch millis: 'yesterday'"},
        reasons(withValue("ts", "yesterday")));
    // A JSON 1.5e12 reads as "1.5E12" (sourceRow): not epoch millis, as from_json made it.
    assertArrayEquals(new String[] {"ts is not epoch millis: '1.5E12'"},
        reasons(withValue("ts", "1.5E12")));
  }

  @Test
  void aBlankTsIsTheIngestionTime() {
    Object[] out = withValue("ts", " ");
    assertValid(out);
    assertEquals(NOW, column(out, "ts"));
    assertEquals(true, out[N]);
  }

  // --- text ------------------------------------------------------------------------

  @ParameterizedTest
  @ValueSource(strings = {"", "   ", " \u0007 ", "\u00a0\u2003", "\n\t"})
  void emptyRequiredTextIsRejected(String value) {
    assertArrayEquals(new String[] {"name is empty"}, reasons(withValue("name", value)));
  }

  @Test
  void emptyOptionalTextIsStoredAsNull() {
    Object[] out = withValue("brand", " \u0000 ");
    assertValid(out);
    assertNull(column(out, "brand"));
  }

  @Test
  void containersAreNotText() {
    assertArrayEquals(new String[] {"name must be text"},
        reasons(withValue("name", "{\"en\": \"x\"}")));
    assertArrayEquals(new String[] {"brand must be text"},
        reasons(withValue("brand", " [\"a\"]")));
    // Only a whole JSON container is one: these are text.
    assertEquals("[1, 2", column(withValue("name", "[1, 2"), "name"));
    assertEquals("{a}", column(withValue("name", "{a}"), "name"));
  }

  @Test
  void textLosesControlCharactersAndEdgeSpaces() {
    StringBuilder controls = new StringBuilder();
    for (char c = 0; c < 0x20; c++) {
      controls.append(c);
    }
    for (char c = 0x7f; c < 0xa0; c++) {
      controls.append(c);
    }
    String value = controls + "a" + controls + "b" + controls;
    // \t, \n and \r (apart) become a space each; the other controls go.
    assertEquals("a  b", column(withValue("name", value), "name"));
    assertEquals("x", column(withValue("name", "\u00a0 x \u2003"), "name"));
    assertEquals("y", column(withValue("name", "\u2028y\t"), "name"));
    assertEquals("plain", column(withValue("name", "  plain  "), "name"));
  }

  // --- amount ----------------------------------------------------------------------

  @Test
  void pricesFromZero() {
    assertEquals(0.0, column(withValue("price", "0"), "price"));
    assertEquals(4.5, column(withValue("price", " 4.5 "), "price"));
    assertEquals(1e308, column(withValue("price", "1e308"), "price"));
    // Spark's cast to DOUBLE is Java's parser: hexadecimal and a d/f suffix are numbers.
    assertEquals(8.0, column(withValue("price", "0x1p3"), "price"));
    assertEquals(4.5, column(withValue("price", "4.5d"), "price"));
    assertArrayEquals(new String[] {"price must be >= 0"},
        reasons(withValue("price", "-0.01")));
  }

  @Test
  void aMissingPriceIsNull() {
    for (String value : new String[] {null, "", " "}) {
      Object[] out = withValue("price", value);
      assertValid(out);
      assertNull(column(out, "price"));
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"NaN", "Infinity", "-Infinity", "inf", " -INF ", "1e309"})
  void pricesMustBeFinite(String value) {
    assertArrayEquals(new String[] {"price must be finite"}, reasons(withValue("price", value)));
  }

  @Test
  void pricesThatAreNotNumbers() {
    assertArrayEquals(new String[] {"price must be a number"},
        reasons(withValue("price", "true")));
    assertArrayEquals(new String[] {"price must be a number"},
        reasons(withValue("price", "[1]")));
    assertArrayEquals(new String[] {"price is not a number: 'cheap'"},
        reasons(withValue("price", "cheap")));
  }

  // --- reasons, op, malformed ------------------------------------------------------

  @Test
  void everyReasonInItsOrder() {
    Object[] out = check("id", "a", "name", "", "description", "{}", "price", "-1", "ts", "t");
    assertArrayEquals(new String[] {"id is not an integer: 'a'", "description must be text",
        "name is empty", "price must be >= 0", "ts is not epoch millis: 't'"}, reasons(out));
    assertArrayEquals(new String[] {"id is missing", "name is empty"},
        reasons(check("id", "", "name", "")));
  }

  @Test
  void aReasonQuotesTheFirst40CharactersOfTheValue() {
    char[] xs = new char[39];
    Arrays.fill(xs, 'x');
    String head = new String(xs) + "\ud83d\ude00";  // an emoji is one character
    assertArrayEquals(new String[] {"id is not an integer: '" + head + "'"},
        reasons(withValue("id", head + "yz")));
  }

  @ParameterizedTest
  @ValueSource(strings = {"upsert", "u", "insert", "i", "update", "c", "r", " UPSERT "})
  void upsertOps(String op) {
    Object[] out = check("id", "1", "name", "Mug", "op", op);
    assertValid(out);
    assertEquals(false, out[N + 1]);
  }

  @Test
  void deletesNeedOnlyAnIdAndAValidTs() {
    Object[] delete = check("id", "5", "name", "", "price", "-1", "op", " D ");
    assertValid(delete);
    assertEquals(true, delete[N + 1]);
    assertArrayEquals(new String[] {"id is missing"}, reasons(check("op", "delete")));
    assertArrayEquals(new String[] {"ts is not epoch millis: '-5'"},
        reasons(check("id", "5", "ts", "-5", "op", "d")));
  }

  @Test
  void otherOpsAreRejected() {
    assertArrayEquals(new String[] {"op must be upsert or delete: 'merge'"},
        reasons(check("id", "1", "name", "Mug", "op", "merge")));
    // Kept: an empty op is not "no op" (Spark's CSV reader gives null for an empty field).
    assertArrayEquals(new String[] {"op must be upsert or delete: ''"},
        reasons(check("id", "1", "name", "Mug", "op", "")));
  }

  @Test
  void aMalformedRowHasThatReasonOnly() {
    Object[] out = check("id", "x", "malformed", "a ragged CSV line");
    assertArrayEquals(new String[] {"a ragged CSV line"}, reasons(out));
  }

  // --- JSON lines ------------------------------------------------------------------

  Object[] line(String json) {
    return rules.check(rules.sourceRow(json), NOW);
  }

  String read(String json, String column) {
    return rules.sourceRow(json)[COLUMNS.indexOf(column)];
  }

  @Test
  void jsonScalarsReadAsFromJsonWroteThem() {
    assertEquals("1000.0", read("{\"id\": 1e3}", "id"));
    assertEquals("0", read("{\"id\": -0}", "id"));
    assertEquals("12.5", read("{\"price\": 12.50}", "price"));
    assertEquals("1.0", read("{\"price\": 1.0000000000000000001}", "price"));
    assertEquals("1.5E12", read("{\"ts\": 1.5e12}", "ts"));
    assertEquals("true", read("{\"brand\": true}", "brand"));
    assertNull(read("{\"brand\": null}", "brand"));
    assertEquals("{\"a\":[1]}", read("{\"name\": {\"a\": [1]}}", "name"));
    // Non-finite numbers are written quoted, so they are not numbers to the rules.
    assertEquals("\"NaN\"", read("{\"price\": NaN}", "price"));
    assertEquals("\"Infinity\"", read("{\"price\": 1e400}", "price"));
    assertEquals("single", read("{'name': 'single'}", "name"));
  }

  @Test
  void aJsonLineIsCheckedWhole() {
    Object[] out = line("{\"id\": 12.0e0, \"name\": \" Mug \", \"price\": 3}");
    assertValid(out);
    assertArrayEquals(new Object[] {12L, NOW, "Mug", null, null, null, 3.0},
        Arrays.copyOf(out, N));
  }

  @ParameterizedTest
  @ValueSource(strings = {"{not json", "[1, 2]", "\"text\"", "{\"id\": 1,}", "{\"id\": 007}",
      "{\"id\": 1", "\t"})
  void linesThatAreNotJsonObjects(String json) {
    assertArrayEquals(new String[] {ProductRules.NOT_JSON_OBJECT}, reasons(line(json)));
  }

  @Test
  void textAfterTheObjectIsIgnored() {
    assertValid(line("{\"id\": 1, \"name\": \"x\"} trailing text"));
  }

  @Test
  void keysMatchByNameThenAlias() {
    // Own name wins over an alias wherever it is; among aliases the first in the row.
    assertEquals("own", read("{\"title\": \"alias\", \"name\": \"own\"}", "name"));
    assertEquals("first", read("{\"title\": \"first\", \"product_name\": \"second\"}", "name"));
    // A null own name leaves the alias.
    assertEquals("alias", read("{\"name\": null, \"title\": \"alias\"}", "name"));
    // Case, edge spaces, spaces and dashes do not matter; the first of a repeated key wins.
    assertEquals("2", read("{\"Unit-Price\": 2}", "price"));
    assertEquals("9", read("{\"Product ID\": 9}", "id"));
    assertEquals("x", read("{\" NAME \": \"x\"}", "name"));
    assertEquals("first", read("{\"name\": \"first\", \"name\": \"second\"}", "name"));
    // Unknown keys are ignored, commas and U+0000 in them included.
    assertEquals("x", read("{\"name\": \"x\", \"a,title\": \"no\", \"a\\u0000b\": 1}", "name"));
    assertValid(line("{\"id\": 10, \"name\": \"x\", \"a\\u0000title\": \"no\"}"));
  }

  @Test
  void theFirstOpKeyWins() {
    assertEquals("delete", rules.sourceRow("{\"operation\": \"delete\", \"op\": \"upsert\"}")[OP]);
    assertEquals("upsert", rules.sourceRow("{\"OP\": \"upsert\", \"operation\": \"delete\"}")[OP]);
  }

  // --- the Spark functions ---------------------------------------------------------

  @Test
  void theJsonLineFunctionDropsBlankLinesAndReadsTheTimeAsText() throws Exception {
    assertNull(rules.jsonLineFunction().call("   ", "5"));
    assertNull(rules.jsonLineFunction().call(null, "5"));
    Row row = rules.jsonLineFunction().call("{\"id\": 1, \"name\": \"Mug\"}", "5");
    assertEquals(N + 3, row.length());
    assertEquals(5L, row.get(COLUMNS.indexOf("ts")));
    assertEquals(true, row.get(N));
  }

  @Test
  void theSourceRowFunctionReadsNulls() throws Exception {
    Row source = org.apache.spark.sql.RowFactory.create((Object[]) raw("id", "3", "name", "Cup"));
    Row row = rules.sourceRowFunction().call(source, "7");
    assertEquals(3L, row.get(0));
    assertEquals(7L, row.get(COLUMNS.indexOf("ts")));
    assertArrayEquals(new String[0], (String[]) row.get(N + 2));
  }
}
