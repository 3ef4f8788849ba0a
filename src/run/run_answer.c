/* run_answer — see run_answer.h. Split out of runs.c (which decides when and to whom a run is
 * answered); this file only says what the answer is. */
#include "run_answer.h"
#include "jsonfast.h"
#include "jsonscan.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RA_MAX_MEMBERS 32

json_t *run_answer_envelope(json_t *envelope, const char *handle, json_t *mutations)
{
    json_t *env = json_copy(envelope); /* shallow: the values are shared, only keys go */
    json_object_del(env, "ok");
    json_object_del(env, "calls");
    json_object_del(env, "recycle");
    json_object_del(env, "mutations");
    if (json_array_size(mutations))
        json_object_set(env, "mutations", mutations);
    json_object_del(env, "content"); /* the program's content blocks: in the result's content */
    if (handle && handle[0])         /* the state handle (SEP-2567): pass it back to continue */
        json_object_set_new(env, "namespace", json_string(handle));
    return env;
}

/* A block the program returned, as MCP defines it: image/audio {data, mimeType}, resource_link
 * {uri, name}, resource {resource: {uri, text | blob}}. The worker is not trusted: anything else
 * is not passed on. Returns NULL when fine, else why not. */
static const char *block_problem(json_t *b)
{
    const char *type = json_string_value(json_object_get(b, "type"));
    if (!type)
        return "a content block needs a string \"type\"";
    if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0)
        return json_is_string(json_object_get(b, "data")) &&
                       json_is_string(json_object_get(b, "mimeType"))
                   ? NULL
                   : "an image or audio block needs string data (base64) and mimeType";
    if (strcmp(type, "resource_link") == 0)
        return json_is_string(json_object_get(b, "uri")) &&
                       json_is_string(json_object_get(b, "name"))
                   ? NULL
                   : "a resource_link block needs string uri and name";
    if (strcmp(type, "resource") == 0) {
        json_t *res = json_object_get(b, "resource");
        return json_is_string(json_object_get(res, "uri")) &&
                       (json_is_string(json_object_get(res, "text")) ||
                        json_is_string(json_object_get(res, "blob")))
                   ? NULL
                   : "a resource block needs resource.uri and resource.text or resource.blob";
    }
    return "content block types are image, audio, resource_link and resource";
}

json_t *run_answer_result(json_t *env, json_t *blocks, int is_error)
{
    char *text = jf_dumps(env); /* the bytes of json_dumps(env, JSON_COMPACT) */
    json_t *block = json_object(), *content = json_array(), *result = json_object();
    json_object_set_new_nocheck(block, "type", json_string_nocheck("text"));
    json_object_set_new_nocheck(block, "text", json_string(text ? text : "{}"));
    json_array_append_new(content, block);
    size_t i;
    json_t *b;
    json_array_foreach(blocks, i, b)
    {
        const char *why = json_is_object(b) ? block_problem(b) : "a content block is an object";
        if (!why) {
            json_array_append(content, b);
            continue;
        }
        char note[200];
        snprintf(note, sizeof(note), "codemcp: content block %zu was not passed on: %s", i + 1,
                 why);
        json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", note));
    }
    json_object_set_new_nocheck(result, "content", content);
    json_object_set_nocheck(result, "structuredContent", env);
    json_object_set_new_nocheck(result, "isError", json_boolean(is_error));
    free(text);
    return result;
}

static int is_key(const struct js_member *m, const char *k)
{
    size_t n = strlen(k);
    return m->klen == n && memcmp(m->key, k, n) == 0;
}

char *run_answer_text(json_t *request_id, const char *env, size_t len, const char *handle,
                      const char *mutations, size_t *out_len)
{
    struct js_member m[RA_MAX_MEMBERS];
    int n = js_members(env, len, m, RA_MAX_MEMBERS);
    if (n < 0 || !js_is(js_get(m, n, "ok"), "true") || js_get(m, n, "recycle") ||
        js_get(m, n, "content") || (handle[0] && js_get(m, n, "namespace")))
        return NULL;
    /* The answer's envelope: the members in their order, ok, calls and mutations left out (as
     * json_object_del leaves the others in theirs), the gateway's mutations, the handle last (as
     * json_object_set_new appends a key the object did not have). */
    struct buf e = {0}, r = {0};
    char *out = NULL;
    buf_append(&e, "{", 1);
    for (int i = 0; i < n; i++) {
        if (is_key(&m[i], "ok") || is_key(&m[i], "calls") || is_key(&m[i], "mutations"))
            continue;
        if (e.len > 1)
            buf_append(&e, ",", 1);
        buf_append(&e, "\"", 1);
        buf_append(&e, m[i].key, m[i].klen); /* canonical keys have no escapes */
        buf_append(&e, "\":", 2);
        buf_append(&e, m[i].val, m[i].vlen);
    }
    if (mutations) {
        buf_appends(&e, e.len > 1 ? ",\"mutations\":" : "\"mutations\":");
        buf_appends(&e, mutations);
    }
    if (handle[0]) {
        buf_appends(&e, e.len > 1 ? ",\"namespace\":" : "\"namespace\":");
        if (jf_append(&e.data, &e.len, &e.cap, NULL, handle, strlen(handle)) < 0)
            goto done;
    }
    buf_append(&e, "}", 1);
    /* rpc_result's members (jsonrpc, id, result) around run_answer_result's (content,
     * structuredContent, isError). */
    buf_appends(&r, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (!request_id)
        buf_appends(&r, "null");
    else if (jf_append(&r.data, &r.len, &r.cap, request_id, NULL, 0) < 0)
        goto done;
    buf_appends(&r, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
    if (jf_append(&r.data, &r.len, &r.cap, NULL, e.data, e.len) < 0)
        goto done;
    buf_appends(&r, "}],\"structuredContent\":");
    buf_append(&r, e.data, e.len);
    buf_appends(&r, ",\"isError\":false}}");
    *out_len = r.len;
    out = buf_steal(&r);
done:
    buf_free(&e);
    buf_free(&r);
    return out;
}
