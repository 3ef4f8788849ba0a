/* docker_engine — HTTP over the Docker daemon's Unix socket with libcurl
 * (CURLOPT_UNIX_SOCKET_PATH); see docker_engine.h. The host part of the URL is ignored by
 * the daemon; the API version is left to the daemon (every call used here exists since
 * API 1.25). */
#include "docker_engine.h"

#include "curl_lib.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#define DK_MAX_BODY (16L << 20)

static const char *docker_host; /* DOCKER_HOST */

void dk_set_host(const char *host)
{
    docker_host = host;
}

const char *dk_socket(const char **why)
{
    const char *h = docker_host;
    if (!h || !*h)
        return "/var/run/docker.sock";
    if (strncmp(h, "unix://", 7) == 0 && h[7] == '/')
        return h + 7;
    *why = "DOCKER_HOST must be unix:///path/to/docker.sock (a TCP daemon is not used)";
    return NULL;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct dk_reply *r = ud;
    size_t len = size * n;
    if (r->body.len + len > DK_MAX_BODY)
        return 0;
    buf_append(&r->body, data, len);
    return len;
}

/* One request; the answer's body goes to on_data(data, 1, len, ud). 0 when an answer came
 * (r->status), -1 with r->err. */
static int perform(const char *method, const char *path, const char *json, FILE *upload,
                   long upload_len, long timeout_ms, dk_data_fn on_data, void *ud,
                   struct dk_reply *r)
{
    memset(r, 0, sizeof(*r));
    const char *why = "";
    const char *sock = dk_socket(&why);
    if (!sock) {
        snprintf(r->err, sizeof(r->err), "%s", why);
        return -1;
    }
    CURL *c = curl_easy_init();
    struct curl_slist *hdr = NULL;
    int rc = -1;
    if (!c) {
        if (curl_lib_load(r->err, sizeof(r->err)) == 0)
            snprintf(r->err, sizeof(r->err), "curl_easy_init failed");
        return -1;
    }
    char url[2048];
    snprintf(url, sizeof(url), "http://docker%s", path);
    curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, sock);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, ud);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->err);
    if (upload) {
        hdr = curl_slist_append(hdr, "Content-Type: application/x-tar");
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READDATA, upload);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)upload_len);
    } else if (json) {
        hdr = curl_slist_append(hdr, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
    }
    /* CURLOPT_UPLOAD makes it a PUT unless CUSTOMREQUEST says otherwise (it does). */
    hdr = curl_slist_append(hdr, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    CURLcode cc = curl_easy_perform(c);
    if (cc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        rc = 0;
    } else if (!r->err[0]) {
        snprintf(r->err, sizeof(r->err), "%s", curl_easy_strerror(cc));
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    return rc;
}

int dk_call(const char *method, const char *path, const char *json, FILE *upload, long upload_len,
            long timeout_ms, struct dk_reply *r)
{
    return perform(method, path, json, upload, upload_len, timeout_ms, on_body, r, r);
}

int dk_stream(const char *path, dk_data_fn on_data, void *ud, char *err, size_t err_len)
{
    struct dk_reply r;
    int rc = perform("POST", path, NULL, NULL, 0, 0, on_data, ud, &r);
    if (rc < 0)
        snprintf(err, err_len, "%s", r.err);
    return rc;
}

void dk_reply_free(struct dk_reply *r)
{
    buf_free(&r->body);
}
