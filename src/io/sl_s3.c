// s3:// locations: settings resolution (environment, shared config files),
// addressing, and a SigV4 signer plugged into the HTTP source. See sl_s3.h.
#include "sl_s3.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../core/sl_alloc.h"
#include "../core/sl_error.h"
#include "sl_s3_internal.h"
#include "sl_sigv4.h"
#include "sl_source.h"
#include "sl_source_http.h"

static void copy_field(char* dst, size_t cap, const char* src, size_t n) {
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static const char* env(const char* name) {
  const char* v = getenv(name);
  return v != NULL && v[0] != '\0' ? v : NULL;
}

/* ---- Shared config files ------------------------------------------------------- */

/// Whether the section header `name` is profile `profile`'s. The credentials
/// file names a profile as it is; the config file "profile NAME" (split at
/// blanks, quotes around NAME dropped, as botocore's shlex.split does) and
/// also "default" for the default profile, as botocore's build_profile_map.
/// With `config` 2, whether it is the config file's "services NAME" section
/// of that name (endpoints per service, which a profile's `services` names).
static int section_is(const char* name, const char* profile, int config) {
  if (!config) return strcmp(name, profile) == 0;
  if (config == 1 && strcmp(name, "default") == 0 && strcmp(profile, "default") == 0) return 1;
  const char* word = config == 2 ? "services" : "profile";
  if (strncmp(name, word, strlen(word)) != 0) return 0;
  const char* p = name + strlen(word);
  while (*p != '\0' && !isspace((unsigned char)*p)) ++p;  // "profileX y" is y's too
  while (isspace((unsigned char)*p)) ++p;
  size_t n = strlen(p);
  if (n >= 2 && (p[0] == '"' || p[0] == '\'') && p[n - 1] == p[0]) {
    ++p;
    n -= 2;
  } else {
    for (size_t i = 0; i < n; ++i) {
      if (isspace((unsigned char)p[i]) || p[i] == '"' || p[i] == '\'') return 0;  // 3 parts
    }
  }
  return n > 0 && n == strlen(profile) && strncmp(p, profile, n) == 0;
}

/// Looks `key` up in profile `profile`'s section of an INI-style AWS file
/// (`config`: the config file's section names); with `parent`, in that key's
/// nested block ("s3 =\n  addressing_style = path"). Read as Python's
/// configparser reads it for the AWS CLI: option names in any case, '=' or
/// ':' after them (the first one), a later section of the profile replacing
/// an earlier one ([default] and [profile default]); a nested block's lines
/// are "name = value", names as written. Returns 1 and fills `out` when
/// found; with key NULL, 1 when the section is there.
static int ini_lookup(const char* path, const char* profile, int config, const char* parent,
                      const char* key, char* out, size_t cap) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return 0;
  char line[4096], value[4096];
  int in_section = 0, in_parent = 0, found = 0, section_seen = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    char* s = line;
    while (isspace((unsigned char)*s)) ++s;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    if (n == 0 || s[0] == '#' || s[0] == ';') continue;
    int nested = line[0] == ' ' || line[0] == '\t';
    if (s[0] == '[') {
      char* end = strrchr(s, ']');
      if (end == NULL) continue;
      *end = '\0';
      char* name = s + 1;
      while (isspace((unsigned char)*name)) ++name;
      size_t k = strlen(name);
      while (k > 0 && isspace((unsigned char)name[k - 1])) name[--k] = '\0';
      in_section = section_is(name, profile, config);
      in_parent = 0;
      if (in_section) {
        section_seen = 1;
        found = 0;  // this section's keys replace an earlier one's
      }
      continue;
    }
    if (!in_section || key == NULL) continue;
    // Nested lines split at '=' (botocore's _parse_nested); others at the
    // first '=' or ':' (configparser's delimiters).
    char* eq = nested ? strchr(s, '=') : s + strcspn(s, "=:");
    if (eq == NULL || *eq == '\0') continue;
    char* kend = eq;
    while (kend > s && isspace((unsigned char)kend[-1])) --kend;
    size_t klen = (size_t)(kend - s);
    char* v = eq + 1;
    while (isspace((unsigned char)*v)) ++v;
    if (!nested) {
      in_parent = parent != NULL && *v == '\0' && klen == strlen(parent) &&
                  strncasecmp(s, parent, klen) == 0;
    }
    if (nested != (parent != NULL) || (nested && !in_parent)) continue;
    if (klen != strlen(key) ||
        (nested ? strncmp(s, key, klen) : strncasecmp(s, key, klen)) != 0) {
      continue;
    }
    copy_field(value, sizeof value, v, strlen(v));
    found = 1;
  }
  fclose(f);
  if (key == NULL) return section_seen;
  if (found) copy_field(out, cap, value, strlen(value));
  return found;
}

/// Where one profile's settings live: the shared credentials and config
/// files (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE, else under ~/.aws;
/// "" when neither is known).
struct aws_profile {
  const char* name;
  char creds[1024], config[1024];
};

static void aws_profile_locate(struct aws_profile* p, const char* name) {
  const char* home = env("HOME");
  const char* v = env("AWS_SHARED_CREDENTIALS_FILE");
  snprintf(p->creds, sizeof p->creds, "%s%s", v != NULL ? v : home != NULL ? home : "",
           v != NULL ? "" : home != NULL ? "/.aws/credentials" : "");
  v = env("AWS_CONFIG_FILE");
  snprintf(p->config, sizeof p->config, "%s%s", v != NULL ? v : home != NULL ? home : "",
           v != NULL ? "" : home != NULL ? "/.aws/config" : "");
  p->name = name;
}

/// A key of the profile (in the `nested` block of the config file when not
/// NULL): the credentials file first when `credentials_too`, then the config
/// file. With a NULL key, whether the profile's section exists.
static int profile_lookup(const struct aws_profile* p, const char* nested, const char* key,
                          int credentials_too, char* out, size_t cap) {
  if (credentials_too && p->creds[0] != '\0' &&
      ini_lookup(p->creds, p->name, 0, NULL, key, out, cap)) {
    return 1;
  }
  return p->config[0] != '\0' && ini_lookup(p->config, p->name, 1, nested, key, out, cap);
}

/// The profile's keys as botocore takes them: key, secret and token all from
/// the first file (credentials, then config) whose section has an access
/// key id (a token in the other file is not this key's). 1 when found, 0
/// when neither has a key, -1 when that file lacks the secret.
static int profile_keys(const struct aws_profile* p, struct s3_settings* s) {
  for (int config = 0; config < 2; ++config) {
    const char* path = config ? p->config : p->creds;
    if (path[0] == '\0' ||
        !ini_lookup(path, p->name, config, NULL, "aws_access_key_id", s->access_key,
                    sizeof s->access_key)) {
      continue;
    }
    if (!ini_lookup(path, p->name, config, NULL, "aws_secret_access_key", s->secret_key,
                    sizeof s->secret_key)) {
      return -1;
    }
    s->session_token[0] = '\0';
    ini_lookup(path, p->name, config, NULL, "aws_session_token", s->session_token,
               sizeof s->session_token);
    return 1;
  }
  return 0;
}

/// The profile's setting that makes AWS tools get credentials some other way
/// than from static keys (a role, web identity, SSO, an external process),
/// NULL when none: sluice implements none of these providers. botocore tries
/// a role, web identity and SSO before the profile's static keys, so those
/// count whether or not keys are there too; credential_process only comes
/// into play without keys (`has_keys`).
static const char* unsupported_provider(const struct aws_profile* p, int has_keys) {
  static const char* const before_keys[] = {"role_arn", "web_identity_token_file",
                                            "sso_session", "sso_start_url"};
  char value[8];
  for (size_t i = 0; i < sizeof before_keys / sizeof before_keys[0]; ++i) {
    if (profile_lookup(p, NULL, before_keys[i], 1, value, sizeof value)) return before_keys[i];
  }
  if (!has_keys && profile_lookup(p, NULL, "credential_process", 1, value, sizeof value)) {
    return "credential_process";
  }
  return NULL;
}

/// The settings of one request: the caller's (`given`, may be NULL) over the
/// environment's, over the profile's (keys of a profile the caller names
/// over the environment's). A profile named explicitly (option or
/// AWS_PROFILE) that neither file has is an error, as in AWS tools; the
/// implicit "default" may be missing (then anonymous unless keys are set).
static int resolve_settings(struct s3_settings* s, const struct sluice_s3_options* given,
                            const char* location, struct sluice_error* error) {
  memset(s, 0, sizeof *s);
  const char* v = given != NULL && given->profile != NULL ? given->profile : env("AWS_PROFILE");
  copy_field(s->profile, sizeof s->profile, v != NULL ? v : "default",
             strlen(v != NULL ? v : "default"));
  s->profile_named = v != NULL;
  struct aws_profile profile;
  aws_profile_locate(&profile, s->profile);
  if (v != NULL && !profile_lookup(&profile, NULL, NULL, 1, NULL, 0)) {
    return sl_error_set(error, EINVAL, "%s: AWS profile '%s' not found in %s or %s", location,
                        s->profile,
                        profile.creds[0] != '\0' ? profile.creds : "~/.aws/credentials",
                        profile.config[0] != '\0' ? profile.config : "~/.aws/config");
  }
  const char* key = given != NULL ? given->access_key_id : NULL;
  const char* secret = given != NULL ? given->secret_access_key : NULL;
  const char* token = given != NULL ? given->session_token : NULL;
  if ((key == NULL) != (secret == NULL)) {
    return sl_error_set(error, EINVAL, "%s: an access key id needs its secret access key, and "
                        "the other way round", location);
  }
  // A profile given explicitly (not by AWS_PROFILE) takes its keys from the
  // files, not the environment, as botocore's Session(profile_name=...) and
  // `aws --profile` do.
  int explicit_profile = given != NULL && given->profile != NULL;
  int found = 0;
  if (key == NULL && !explicit_profile) {
    key = env("AWS_ACCESS_KEY_ID");
    secret = env("AWS_SECRET_ACCESS_KEY");
    token = env("AWS_SESSION_TOKEN");
    // Half a pair is a mistake, not a reason to sign with the profile's
    // keys (another identity) or not at all: botocore's
    // PartialCredentialsError.
    if ((key == NULL) != (secret == NULL) && !(given != NULL && given->anonymous)) {
      return sl_error_set(error, EINVAL, "%s: %s is set but %s is not (set both, or neither "
                          "to use a profile)", location,
                          key != NULL ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                          key != NULL ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
    }
  }
  const char* provider = NULL;
  if (given != NULL && given->anonymous) {
    s->anonymous = 1;  // unsigned requests: no credentials at all
  } else if (key != NULL && secret != NULL) {
    copy_field(s->access_key, sizeof s->access_key, key, strlen(key));
    copy_field(s->secret_key, sizeof s->secret_key, secret, strlen(secret));
    if (token != NULL) copy_field(s->session_token, sizeof s->session_token, token, strlen(token));
  } else if ((found = profile_keys(&profile, s)) < 0) {
    return sl_error_set(error, EINVAL, "%s: AWS profile '%s' has an aws_access_key_id but no "
                        "aws_secret_access_key in the same file (%s or %s), as AWS tools "
                        "require", location, s->profile, profile.creds, profile.config);
  } else if ((provider = unsupported_provider(&profile, found > 0)) != NULL) {
    // AWS tools would sign as someone else than these keys (or than
    // nobody): refuse rather than send requests they would not.
    return sl_error_set(error, ENOTSUP, "%s: AWS profile '%s' gets its credentials through %s, "
                        "which sluice does not support; sluice signs with static keys only "
                        "(aws_access_key_id and aws_secret_access_key in %s or %s, or "
                        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment; "
                        "`aws configure export-credentials --profile %s --format env` prints "
                        "them)", location, profile.name, provider,
                        profile.creds[0] != '\0' ? profile.creds : "~/.aws/credentials",
                        profile.config[0] != '\0' ? profile.config : "~/.aws/config",
                        profile.name);
  } else if (found > 0) {
    // (key, secret and token from that one file)
  } else {
    s->access_key[0] = '\0';  // anonymous
    s->secret_key[0] = '\0';
  }
  if ((v = given != NULL ? given->region : NULL) != NULL || (v = env("AWS_REGION")) != NULL ||
      (v = env("AWS_DEFAULT_REGION")) != NULL) {
    copy_field(s->region, sizeof s->region, v, strlen(v));
  } else if (!profile_lookup(&profile, NULL, "region", 0, s->region, sizeof s->region)) {
    snprintf(s->region, sizeof s->region, "us-east-1");
  }
  if ((v = given != NULL ? given->endpoint_url : NULL) != NULL ||
      (v = env("AWS_ENDPOINT_URL_S3")) != NULL || (v = env("AWS_ENDPOINT_URL")) != NULL) {
    copy_field(s->endpoint, sizeof s->endpoint, v, strlen(v));
  } else {
    // As the AWS SDKs look it up: the s3 block of the "services" section the
    // profile names, then the profile's own endpoint_url.
    char services[256];
    if (!(profile_lookup(&profile, NULL, "services", 0, services, sizeof services) &&
          profile.config[0] != '\0' &&
          ini_lookup(profile.config, services, 2, "s3", "endpoint_url", s->endpoint,
                     sizeof s->endpoint))) {
      profile_lookup(&profile, NULL, "endpoint_url", 0, s->endpoint, sizeof s->endpoint);
    }
  }
  size_t n = strlen(s->endpoint);
  while (n > 0 && s->endpoint[n - 1] == '/') s->endpoint[--n] = '\0';
  if ((v = given != NULL ? given->addressing_style : NULL) != NULL ||
      (v = env("SLUICE_S3_ADDRESSING_STYLE")) != NULL) {
    copy_field(s->addressing_style, sizeof s->addressing_style, v, strlen(v));
  } else {
    profile_lookup(&profile, "s3", "addressing_style", 0, s->addressing_style,
                   sizeof s->addressing_style);
  }
  if (s->addressing_style[0] != '\0' && strcmp(s->addressing_style, "path") != 0 &&
      strcmp(s->addressing_style, "virtual") != 0 && strcmp(s->addressing_style, "auto") != 0) {
    return sl_error_set(error, EINVAL, "%s: addressing style '%s': expected path, virtual or auto",
                        location, s->addressing_style);
  }
  s->part_size = given != NULL ? given->part_size : 0;  // (checked by sl_s3_part_size)
  return 0;
}

/* ---- Signing ----------------------------------------------------------------- */

int sl_s3_sign_request(struct s3_signer* g, const char* method, const char* query,
                    const char* payload_hash, struct curl_slist** headers,
                    struct sluice_error* error) {
  if (g->settings.access_key[0] == '\0') return 0;  // anonymous
  char date[17];
  sl_sigv4_amz_date((long long)time(NULL), date);
  struct sl_sigv4_header signed_headers[4] = {{"host", g->host},
                                              {"x-amz-content-sha256", payload_hash},
                                              {"x-amz-date", date},
                                              {"x-amz-security-token", g->settings.session_token}};
  size_t n = g->settings.session_token[0] != '\0' ? 4 : 3;
  struct sl_sigv4_request r = {method, g->path, query, signed_headers, n, payload_hash, date,
                               g->settings.region, "s3", g->settings.access_key,
                               g->settings.secret_key};
  char auth[1024];
  int rc = sl_sigv4_authorization(&r, auth, sizeof auth);
  if (rc != 0) return sl_error_set(error, rc, "cannot sign the S3 request (error %d)", rc);
  char line[4200];
  const char* lines[4];
  char l0[128], l1[64], l2[1100];
  snprintf(l0, sizeof l0, "x-amz-content-sha256: %s", payload_hash);
  snprintf(l1, sizeof l1, "x-amz-date: %s", date);
  snprintf(l2, sizeof l2, "Authorization: %s", auth);
  lines[0] = l0;
  lines[1] = l1;
  lines[2] = l2;
  size_t n_lines = 3;
  if (g->settings.session_token[0] != '\0') {
    snprintf(line, sizeof line, "x-amz-security-token: %s", g->settings.session_token);
    lines[n_lines++] = line;
  }
  for (size_t i = 0; i < n_lines; ++i) {
    struct curl_slist* more = g->curl.slist_append(*headers, lines[i]);
    if (more == NULL) return sl_error_set(error, ENOMEM, "out of memory signing a request");
    *headers = more;
  }
  return 0;
}

static int s3_sign(void* ctx, const char* method, const char* url, struct curl_slist** headers,
                   struct sluice_error* error) {
  (void)url;
  return sl_s3_sign_request(ctx, method, "", S3_EMPTY_SHA256, headers, error);
}

void sl_s3_signer_destroy(void* ctx) {
  struct s3_signer* g = ctx;
  if (g == NULL) return;
  const struct sluice_allocator* alloc = g->alloc;
  // The secret does not outlive the source in freed memory.
  memset(&g->settings, 0, sizeof g->settings);
  sl_curl_close(&g->curl);
  sl_free(alloc, g, sizeof *g);
}

/* ---- Open ------------------------------------------------------------------------ */

/// A bucket name that can be a DNS label of a virtual-hosted URL.
static int dns_safe_bucket(const char* bucket, size_t n) {
  if (n < 3 || n > 63) return 0;
  for (size_t i = 0; i < n; ++i) {
    char c = bucket[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return 0;
  }
  return 1;
}

int sl_s3_prepare(const char* location, const struct sl_remote_options* remote,
               const struct sluice_allocator* alloc, struct s3_signer** out, char* url,
               size_t url_cap, struct sluice_error* error) {
  *out = NULL;
  // Messages show the name on one line, as the other sources do.
  char shown[sizeof ((struct s3_signer*)0)->name];
  sl_location_shown(location, shown, sizeof shown);
  const char* rest = location + strlen("s3://");
  const char* slash = strchr(rest, '/');
  if (slash == NULL && rest[0] != '\0') {
    return sl_error_set(error, EINVAL, "%s: expected s3://BUCKET/KEY (every object in the "
                        "bucket: %s/)", shown, shown);
  }
  if (slash == NULL || slash == rest || slash[1] == '\0') {
    return sl_error_set(error, EINVAL, "%s: expected s3://BUCKET/KEY", shown);
  }
  size_t bucket_len = (size_t)(slash - rest);
  const char* key = slash + 1;
  struct s3_signer* g = sl_calloc(alloc, 1, sizeof *g);
  if (g == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", shown);
  g->alloc = alloc;
  memcpy(g->name, shown, sizeof g->name);
  int loaded = sl_curl_open(&g->curl, shown, error);
  if (loaded != 0) {
    sl_free(alloc, g, sizeof *g);
    return loaded;
  }
  int resolved = resolve_settings(&g->settings, remote != NULL ? remote->s3 : NULL, shown, error);
  if (resolved != 0) {
    sl_s3_signer_destroy(g);
    return resolved;
  }
  int custom = g->settings.endpoint[0] != '\0';
  if (!custom) {
    snprintf(g->settings.endpoint, sizeof g->settings.endpoint, "https://s3.%s.amazonaws.com",
             g->settings.region);
  }
  const char* style = g->settings.addressing_style;
  int virtual_hosted = !custom && dns_safe_bucket(rest, bucket_len);
  if (strcmp(style, "path") == 0) virtual_hosted = 0;
  if (strcmp(style, "virtual") == 0) virtual_hosted = 1;

  const char* endpoint = g->settings.endpoint;
  const char* scheme_end = strstr(endpoint, "://");
  if (scheme_end == NULL) {
    // The message first: `endpoint` lives in `g`.
    sl_error_set(error, EINVAL, "%s: endpoint '%s' is not a URL (scheme://host[:port])",
                 shown, endpoint);
    sl_s3_signer_destroy(g);
    return EINVAL;
  }
  const char* authority = scheme_end + 3;
  size_t authority_len = strcspn(authority, "/");
  const char* base_path = authority + authority_len;  // e.g. "" or "/prefix"
  // libcurl leaves a scheme's default port out of the Host header it sends,
  // so the signed host must too (as botocore's canonical host does).
  size_t scheme_len = (size_t)(scheme_end - endpoint);
  const char* default_port = scheme_len == 4 && strncasecmp(endpoint, "http", 4) == 0    ? ":80"
                             : scheme_len == 5 && strncasecmp(endpoint, "https", 5) == 0 ? ":443"
                                                                                          : NULL;
  if (default_port != NULL && authority_len > strlen(default_port) &&
      memcmp(authority + authority_len - strlen(default_port), default_port,
             strlen(default_port)) == 0) {
    authority_len -= strlen(default_port);
  }
  // S3 keys are up to 1024 bytes, each %XX-encoded at worst, then a NUL.
  char encoded_key[3 * 1024 + 1];
  if (sl_sigv4_uri_encode(key, 0, encoded_key, sizeof encoded_key) == (size_t)-1) {
    sl_s3_signer_destroy(g);
    return sl_error_set(error, ENAMETOOLONG, "%s: key too long", shown);
  }
  char bucket[256];
  if (bucket_len >= sizeof bucket) {
    sl_s3_signer_destroy(g);
    return sl_error_set(error, ENAMETOOLONG, "%s: bucket name too long", shown);
  }
  memcpy(bucket, rest, bucket_len);
  bucket[bucket_len] = '\0';
  int w;
  if (virtual_hosted) {
    w = snprintf(g->host, sizeof g->host, "%s.%.*s", bucket, (int)authority_len, authority);
    if (w >= 0 && (size_t)w < sizeof g->host) {
      w = snprintf(g->path, sizeof g->path, "%s/%s", base_path, encoded_key);
    }
  } else {
    w = snprintf(g->host, sizeof g->host, "%.*s", (int)authority_len, authority);
    if (w >= 0 && (size_t)w < sizeof g->host) {
      w = snprintf(g->path, sizeof g->path, "%s/%s/%s", base_path, bucket, encoded_key);
    }
  }
  int u = snprintf(url, url_cap, "%.*s://%s%s", (int)(scheme_end - endpoint), endpoint,
                   g->host, g->path);
  if (w < 0 || (size_t)w >= sizeof g->path || u < 0 || (size_t)u >= url_cap) {
    sl_s3_signer_destroy(g);
    return sl_error_set(error, ENAMETOOLONG, "%s: request URL too long", shown);
  }
  *out = g;
  return 0;
}

void sl_s3_auth_hint(struct s3_signer* g, int rc, struct sluice_error* error) {
  if (rc == EACCES && error != NULL &&
      (strstr(error->message, "HTTP 403") != NULL || strstr(error->message, "HTTP 401") != NULL)) {
    char message[sizeof error->message];
    memcpy(message, error->message, sizeof message);
    char named[300];
    // A profile was asked for, and has no keys: AWS_PROFILE is set already.
    snprintf(named, sizeof named, "AWS profile '%s' has no aws_access_key_id and "
             "aws_secret_access_key, and AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set: "
             "the request was unsigned", g->settings.profile);
    sl_error_set(error, rc, "%s (%s)", message,
                 g->settings.anonymous ? "the request was unsigned, as asked (anonymous "
                                         "access): the bucket is not public"
                 : g->settings.access_key[0] == '\0' && g->settings.profile_named ? named
                 : g->settings.access_key[0] == '\0'
                     ? "no AWS credentials were found: set AWS_ACCESS_KEY_ID and "
                       "AWS_SECRET_ACCESS_KEY or AWS_PROFILE"
                     : "check the AWS credentials, region and endpoint");
  }
}

void sl_s3_curl_reset(const struct sl_curl* curl, CURL* h, const char* url,
                   const struct sl_remote_options* remote, char* errbuf) {
  errbuf[0] = '\0';
  curl->easy_reset(h);
  curl->easy_setopt(h, CURLOPT_URL, url);
  curl->easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);  // keys keep "." / ".." segments, as signed
  curl->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  sl_curl_set_timeouts(curl, h, remote != NULL ? remote->timeout_s : 0);
  curl->easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  if (remote == NULL) return;
  if (remote->tls_insecure) {
    curl->easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl->easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (remote->ca_bundle != NULL) curl->easy_setopt(h, CURLOPT_CAINFO, remote->ca_bundle);
}

int sl_s3_source_open(const char* location, const struct sl_remote_options* remote,
                      const struct sluice_allocator* alloc, struct sl_source** out,
                      struct sluice_error* error) {
  *out = NULL;
  char url[8192];
  struct s3_signer* g;
  SL_RETURN_NOT_OK(sl_s3_prepare(location, remote, alloc, &g, url, sizeof url, error));
  struct sl_http_signer signer = {s3_sign, g, sl_s3_signer_destroy};
  struct sl_http_config config;
  memset(&config, 0, sizeof config);
  config.url = url;
  char shown[sizeof g->name];  // (the source owns g from its open on)
  memcpy(shown, g->name, sizeof shown);
  config.name = shown;
  if (remote != NULL) config.remote = *remote;
  config.signer = &signer;
  // The hint needs the settings, which the source owns (and frees on error).
  struct s3_signer hint_copy;
  memcpy(hint_copy.settings.access_key, g->settings.access_key, sizeof hint_copy.settings.access_key);
  memcpy(hint_copy.settings.profile, g->settings.profile, sizeof hint_copy.settings.profile);
  hint_copy.settings.anonymous = g->settings.anonymous;
  hint_copy.settings.profile_named = g->settings.profile_named;
  int rc = sl_http_source_open_config(&config, alloc, out, error);  // owns g from here
  sl_s3_auth_hint(&hint_copy, rc, error);
  memset(&hint_copy.settings.access_key, 0, sizeof hint_copy.settings.access_key);
  return rc;
}
