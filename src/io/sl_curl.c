// RTLD_NODELETE: libcurl (and the TLS library it starts) stays loaded once
// loaded, so closing the last object never unloads code that registered
// exit handlers.
#define _GNU_SOURCE
#include "sl_curl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../core/sl_error.h"

/// Copies a dlsym result into a function pointer (ISO C has no conversion
/// between object and function pointers; POSIX guarantees the layout).
static int resolve(void* lib, const char* name, void* fn, size_t size) {
  void* sym = dlsym(lib, name);
  if (sym == NULL) return 0;
  memcpy(fn, &sym, size);
  return 1;
}

#define RESOLVE(field, name) resolve(curl->lib, name, &curl->field, sizeof curl->field)

int sl_curl_open(struct sl_curl* curl, const char* what, struct sluice_error* error) {
  memset(curl, 0, sizeof *curl);
  curl->lib = dlopen("libcurl.so.4", RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
  if (curl->lib == NULL) {
    const char* why = dlerror();
    return sl_error_set(error, EIO, "%s: remote reads need libcurl (libcurl.so.4): %s", what,
                        why != NULL ? why : "not found");
  }
  int ok = RESOLVE(global_init, "curl_global_init") &&
           RESOLVE(global_cleanup, "curl_global_cleanup") &&
           RESOLVE(easy_init, "curl_easy_init") && RESOLVE(easy_cleanup, "curl_easy_cleanup") &&
           RESOLVE(easy_reset, "curl_easy_reset") && RESOLVE(easy_setopt, "curl_easy_setopt") &&
           RESOLVE(easy_getinfo, "curl_easy_getinfo") &&
           RESOLVE(easy_perform, "curl_easy_perform") &&
           RESOLVE(easy_strerror, "curl_easy_strerror") &&
           RESOLVE(slist_append, "curl_slist_append") &&
           RESOLVE(slist_free_all, "curl_slist_free_all");
  if (!ok) {
    dlclose(curl->lib);
    memset(curl, 0, sizeof *curl);
    return sl_error_set(error, EIO, "%s: libcurl.so.4 lacks a function sluice needs", what);
  }
  if (curl->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    dlclose(curl->lib);
    memset(curl, 0, sizeof *curl);
    return sl_error_set(error, EIO, "%s: cannot initialise libcurl", what);
  }
  return 0;
}

void sl_curl_close(struct sl_curl* curl) {
  if (curl->lib == NULL) return;
  curl->global_cleanup();
  dlclose(curl->lib);
  memset(curl, 0, sizeof *curl);
}

void sl_curl_set_timeouts(const struct sl_curl* curl, CURL* h, double timeout_s) {
  long connect_ms = 30000, stall_s = 60;
  if (timeout_s > 0) {
    connect_ms = timeout_s < 1e6 ? (long)(timeout_s * 1000 + 0.5) : 1000000000L;
    if (connect_ms < 1) connect_ms = 1;
    stall_s = timeout_s < 1e6 ? (long)timeout_s + (timeout_s > (long)timeout_s) : 1000000L;
  }
  curl->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  // Under 1 byte/s for stall_s seconds (whole seconds: libcurl's unit).
  curl->easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl->easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s);
}

static int is_tls_error(CURLcode c) {
  return c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_SSL_CACERT_BADFILE ||
         c == CURLE_SSL_CONNECT_ERROR || c == CURLE_SSL_CERTPROBLEM ||
         c == CURLE_SSL_ISSUER_ERROR || c == CURLE_SSL_CRL_BADFILE ||
         c == CURLE_SSL_PINNEDPUBKEYNOTMATCH;
}

int sl_curl_retryable(CURLcode c) {
  return c == CURLE_COULDNT_CONNECT || c == CURLE_OPERATION_TIMEDOUT ||
         c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR || c == CURLE_PARTIAL_FILE ||
         c == CURLE_GOT_NOTHING || c == CURLE_HTTP2 || c == CURLE_HTTP2_STREAM ||
         c == CURLE_COULDNT_RESOLVE_HOST;
}

int sl_curl_reason(const struct sl_curl* curl, CURLcode c, const char* errbuf, char* out,
                   size_t cap) {
  const char* detail = errbuf != NULL && errbuf[0] != '\0' ? errbuf : curl->easy_strerror(c);
  if (is_tls_error(c)) {
    snprintf(out, cap, "TLS error: %s (ca_bundle=FILE names the CA, insecure=True skips "
             "verification; CLI: --ca-bundle FILE, --insecure)", detail);
    return EACCES;
  }
  if (c == CURLE_OPERATION_TIMEDOUT) {
    snprintf(out, cap, "timed out: %s", detail);
    return ETIMEDOUT;
  }
  snprintf(out, cap, "%s", detail);
  return EIO;
}
