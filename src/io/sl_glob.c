// Glob matching of '/'-separated relative paths (sl_glob_match, declared in
// sl_location.h). Written by hand because fnmatch(3) has no `**` (a whole
// segment matching any number of segments); glob(3) has none either and lists
// the file system itself, while S3 keys must be matched without one.
//
// Both levels use the linear "resume at the last star" matcher: characters
// within a segment against `*`, and segments within the path against `**`.
// Each other token consumes exactly one character (resp. one segment), so
// only the most recent star ever needs to be retried, and patterns such as
// `*a*a*a*a*b` cost O(pattern * name) instead of exponential time.
#include <stddef.h>
#include <string.h>

#include "sl_location.h"

/// One bracket expression; `p` points just after the '['. Returns the
/// position after the closing ']' and sets *matched, or NULL when the
/// bracket is never closed (the '[' is then an ordinary character).
static const char* match_class(const char* p, const char* end, unsigned char c, int* matched) {
  int negate = 0;
  if (p < end && (*p == '!' || *p == '^')) {
    negate = 1;
    ++p;
  }
  int hit = 0;
  int first = 1;  // a ']' right after '[' or '[!' is a member, not the end
  while (p < end) {
    if (*p == ']' && !first) {
      *matched = hit != negate;
      return p + 1;
    }
    first = 0;
    unsigned char lo = (unsigned char)*p++;
    if (lo == '\\' && p < end) lo = (unsigned char)*p++;
    if (p + 1 < end && *p == '-' && p[1] != ']') {
      ++p;
      unsigned char hi = (unsigned char)*p++;
      if (hi == '\\' && p < end) hi = (unsigned char)*p++;
      if (lo <= c && c <= hi) hit = 1;
    } else if (lo == c) {
      hit = 1;
    }
  }
  return NULL;
}

/// One pattern segment [p, pe) against one name segment [s, se).
static int segment_match(const char* p, const char* pe, const char* s, const char* se) {
  const char* star_p = NULL;  // pattern position after the last '*'
  const char* star_s = NULL;  // name position that star currently stops at
  while (s < se) {
    if (p < pe) {
      unsigned char c = (unsigned char)*s;
      if (*p == '*') {
        while (p < pe && *p == '*') ++p;
        star_p = p;
        star_s = s;
        continue;
      }
      if (*p == '?') {
        ++p;
        ++s;
        continue;
      }
      if (*p == '[') {
        int matched = 0;
        const char* after = match_class(p + 1, pe, c, &matched);
        if (after != NULL) {
          if (matched) {
            p = after;
            ++s;
            continue;
          }
        } else if (c == '[') {
          ++p;
          ++s;
          continue;
        }
      } else if (*p == '\\' && p + 1 < pe) {
        if ((unsigned char)p[1] == c) {
          p += 2;
          ++s;
          continue;
        }
      } else if ((unsigned char)*p == c) {
        ++p;
        ++s;
        continue;
      }
    }
    // Mismatch: let the last star swallow one more character.
    if (star_p == NULL) return 0;
    p = star_p;
    s = ++star_s;
  }
  while (p < pe && *p == '*') ++p;
  return p == pe;
}

/// End of the segment starting at `p`: the next '/' that is not escaped.
static const char* pattern_segment_end(const char* p) {
  while (*p != '\0' && *p != '/') {
    if (*p == '\\' && p[1] != '\0') ++p;
    ++p;
  }
  return p;
}

static const char* name_segment_end(const char* s) {
  while (*s != '\0' && *s != '/') ++s;
  return s;
}

/// The segment after the one ending at `end`, or NULL when that was the last.
static const char* next_segment(const char* end) { return *end == '/' ? end + 1 : NULL; }

static int is_globstar(const char* p, const char* pe) {
  return pe - p == 2 && p[0] == '*' && p[1] == '*';
}

int sl_glob_match(const char* pattern, const char* name) {
  // A position is the start of a segment, NULL once all segments are used.
  const char* p = pattern[0] != '\0' ? pattern : NULL;
  const char* s = name[0] != '\0' ? name : NULL;
  const char* star_p = NULL;  // pattern segment after the last `**`
  const char* star_s = NULL;  // name segment that `**` currently stops at
  int have_star = 0;
  while (s != NULL) {
    const char* se = name_segment_end(s);
    if (p != NULL) {
      const char* pe = pattern_segment_end(p);
      if (is_globstar(p, pe)) {
        p = next_segment(pe);
        star_p = p;
        star_s = s;
        have_star = 1;
        continue;
      }
      if (segment_match(p, pe, s, se)) {
        p = next_segment(pe);
        s = next_segment(se);
        continue;
      }
    }
    // Mismatch: let the last `**` swallow one more segment.
    if (!have_star) return 0;
    star_s = next_segment(name_segment_end(star_s));
    p = star_p;
    s = star_s;
  }
  while (p != NULL) {
    const char* pe = pattern_segment_end(p);
    if (!is_globstar(p, pe)) return 0;
    p = next_segment(pe);
  }
  return 1;
}

int sl_glob_names_hidden(const char* pattern, size_t depth, char c) {
  size_t i = 0;
  int after_globstar = 0;  // segments after a `**` may match at any depth
  for (const char* p = pattern[0] != '\0' ? pattern : NULL; p != NULL; ++i) {
    const char* pe = pattern_segment_end(p);
    if (is_globstar(p, pe)) {
      after_globstar = 1;
    } else if ((after_globstar || i == depth) &&
               (p[0] == c || (p[0] == '\\' && p + 1 < pe && p[1] == c))) {
      return 1;
    }
    p = next_segment(pe);
  }
  return 0;
}

long sl_glob_literal_prefix(const char* pattern, char* out, size_t cap, int* is_glob) {
  if (cap == 0) return -1;
  int glob = pattern[strcspn(pattern, "*?[")] != '\0';
  size_t n = 0;
  for (const char* p = pattern; *p != '\0'; ++p) {
    if (glob && (*p == '*' || *p == '?' || *p == '[')) break;
    if (glob && *p == '\\' && p[1] != '\0') ++p;
    if (n + 1 >= cap) return -1;
    out[n++] = *p;
  }
  out[n] = '\0';
  *is_glob = glob;
  return (long)n;
}
