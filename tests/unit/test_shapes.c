/* Unit tests for src/catalog/shapes.c: shapes of values and schemas, union across calls, the
 * bounded description exemplar. */
#include "check.h"
#include "shapes.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static json_t *parse(const char *s)
{
    return json_loads(s, JSON_DECODE_ANY, NULL);
}

static char *exemplar_of(const char *value)
{
    json_t *v = parse(value), *s = shapes_of_value(v);
    char *text = shapes_exemplar(s);
    json_decref(v);
    json_decref(s);
    return text;
}

int main(void)
{
    /* Shape of a value, and its exemplar with sorted keys and arrays as one element. */
    char *ex = exemplar_of("{\"login\":\"x\",\"id\":1,\"score\":1.5,\"ok\":true,\"tags\":[\"a\"],"
                           "\"owner\":{\"name\":\"n\",\"bio\":null}}");
    CHECK(strcmp(ex, "{id: int, login: str, ok: bool, owner: {bio: None, name: str}, score: "
                     "float, tags: [str]}") == 0,
          "exemplar of a value: %s", ex);
    free(ex);

    /* Union over calls: entity variants add fields; null merges into anything. */
    json_t *a = parse("{\"items\":[{\"number\":1,\"title\":\"t\"}]}");
    json_t *b = parse("{\"items\":[{\"number\":2,\"state\":null}],\"total\":3}");
    json_t *sa = shapes_of_value(a), *sb = shapes_of_value(b);
    json_t *m = shapes_merge(sa, sb);
    json_t *item = json_object_get(json_object_get(json_object_get(m, "fields"), "items"), "items");
    json_t *fields = json_object_get(item, "fields");
    CHECK(json_object_get(fields, "number") && json_object_get(fields, "title") &&
              json_object_get(fields, "state"),
          "array items are the union of the variants");
    CHECK(json_object_get(json_object_get(m, "fields"), "total") != NULL,
          "a top-level field seen once is kept");
    json_t *mm = shapes_merge(m, sa);
    CHECK(json_equal(mm, m), "merging a known shape changes nothing");

    /* Incompatible kinds become "any" (never used to flag code). */
    json_t *str = parse("\"x\""), *obj = parse("{\"k\":1}");
    json_t *s1 = shapes_of_value(str), *s2 = shapes_of_value(obj);
    json_t *mixed = shapes_merge(s1, s2);
    CHECK(strcmp(json_string_value(json_object_get(mixed, "k")), "any") == 0,
          "a string merged with an object is any");

    /* From a JSON Schema: objects are open unless additionalProperties is false. */
    json_t *schema = parse("{\"type\":\"object\",\"properties\":{\"entities\":{\"type\":\"array\","
                           "\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
                           "\"string\"}},\"additionalProperties\":false}}}}");
    json_t *ss = shapes_of_schema(schema);
    CHECK(json_is_true(json_object_get(ss, "open")), "a schema object without "
                                                     "additionalProperties:false is open");
    json_t *inner = json_object_get(
        json_object_get(json_object_get(json_object_get(ss, "fields"), "entities"), "items"),
        "open");
    CHECK(inner == NULL, "additionalProperties:false gives a closed object");

    /* Bounds: at most 12 fields, depth 3, 600 bytes. */
    struct buf big = {0};
    buf_appends(&big, "{");
    for (int i = 0; i < 40; i++)
        buf_printf(&big, "%s\"field_with_a_long_name_%02d\":{\"a\":{\"b\":{\"c\":{\"d\":1}}}}",
                   i ? "," : "", i);
    buf_appends(&big, "}");
    ex = exemplar_of(big.data);
    CHECK(strlen(ex) <= 600, "the exemplar is capped at 600 bytes (%zu)", strlen(ex));
    CHECK(strstr(ex, "field_with_a_long_name_12") == NULL, "at most 12 fields are shown");
    CHECK(strstr(ex, "{...}") != NULL && strstr(ex, "d:") == NULL, "depth is capped at 3");
    free(ex);
    buf_free(&big);

    json_t *all[] = {a, b, sa, sb, m, mm, str, obj, s1, s2, mixed, schema, ss};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        json_decref(all[i]);
    return CHECK_DONE();
}
