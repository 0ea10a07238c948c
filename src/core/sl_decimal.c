// Decimal values: whether an unscaled value has at most `precision`
// decimal digits, as Arrow requires of decimal128/256 values, and the
// text of a number read into one (by the CSV reader, for a column's values,
// and by row filters, for a literal compared with a decimal column), and
// the big-endian bytes Avro and CQL store them as.
#include "sl_decimal.h"

#include <errno.h>
#include <string.h>

/// 10^p for p = 0..76, as four little-endian 64-bit limbs (10^76 < 2^253).
static const uint64_t k_pow10[77][4] = {
    {0x0000000000000001u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e0
    {0x000000000000000au, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e1
    {0x0000000000000064u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e2
    {0x00000000000003e8u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e3
    {0x0000000000002710u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e4
    {0x00000000000186a0u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e5
    {0x00000000000f4240u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e6
    {0x0000000000989680u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e7
    {0x0000000005f5e100u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e8
    {0x000000003b9aca00u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e9
    {0x00000002540be400u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e10
    {0x000000174876e800u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e11
    {0x000000e8d4a51000u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e12
    {0x000009184e72a000u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e13
    {0x00005af3107a4000u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e14
    {0x00038d7ea4c68000u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e15
    {0x002386f26fc10000u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e16
    {0x016345785d8a0000u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e17
    {0x0de0b6b3a7640000u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e18
    {0x8ac7230489e80000u, 0x0000000000000000u, 0x0000000000000000u, 0x0000000000000000u},  // 1e19
    {0x6bc75e2d63100000u, 0x0000000000000005u, 0x0000000000000000u, 0x0000000000000000u},  // 1e20
    {0x35c9adc5dea00000u, 0x0000000000000036u, 0x0000000000000000u, 0x0000000000000000u},  // 1e21
    {0x19e0c9bab2400000u, 0x000000000000021eu, 0x0000000000000000u, 0x0000000000000000u},  // 1e22
    {0x02c7e14af6800000u, 0x000000000000152du, 0x0000000000000000u, 0x0000000000000000u},  // 1e23
    {0x1bcecceda1000000u, 0x000000000000d3c2u, 0x0000000000000000u, 0x0000000000000000u},  // 1e24
    {0x161401484a000000u, 0x0000000000084595u, 0x0000000000000000u, 0x0000000000000000u},  // 1e25
    {0xdcc80cd2e4000000u, 0x000000000052b7d2u, 0x0000000000000000u, 0x0000000000000000u},  // 1e26
    {0x9fd0803ce8000000u, 0x00000000033b2e3cu, 0x0000000000000000u, 0x0000000000000000u},  // 1e27
    {0x3e25026110000000u, 0x00000000204fce5eu, 0x0000000000000000u, 0x0000000000000000u},  // 1e28
    {0x6d7217caa0000000u, 0x00000001431e0faeu, 0x0000000000000000u, 0x0000000000000000u},  // 1e29
    {0x4674edea40000000u, 0x0000000c9f2c9cd0u, 0x0000000000000000u, 0x0000000000000000u},  // 1e30
    {0xc0914b2680000000u, 0x0000007e37be2022u, 0x0000000000000000u, 0x0000000000000000u},  // 1e31
    {0x85acef8100000000u, 0x000004ee2d6d415bu, 0x0000000000000000u, 0x0000000000000000u},  // 1e32
    {0x38c15b0a00000000u, 0x0000314dc6448d93u, 0x0000000000000000u, 0x0000000000000000u},  // 1e33
    {0x378d8e6400000000u, 0x0001ed09bead87c0u, 0x0000000000000000u, 0x0000000000000000u},  // 1e34
    {0x2b878fe800000000u, 0x0013426172c74d82u, 0x0000000000000000u, 0x0000000000000000u},  // 1e35
    {0xb34b9f1000000000u, 0x00c097ce7bc90715u, 0x0000000000000000u, 0x0000000000000000u},  // 1e36
    {0x00f436a000000000u, 0x0785ee10d5da46d9u, 0x0000000000000000u, 0x0000000000000000u},  // 1e37
    {0x098a224000000000u, 0x4b3b4ca85a86c47au, 0x0000000000000000u, 0x0000000000000000u},  // 1e38
    {0x5f65568000000000u, 0xf050fe938943acc4u, 0x0000000000000002u, 0x0000000000000000u},  // 1e39
    {0xb9f5610000000000u, 0x6329f1c35ca4bfabu, 0x000000000000001du, 0x0000000000000000u},  // 1e40
    {0x4395ca0000000000u, 0xdfa371a19e6f7cb5u, 0x0000000000000125u, 0x0000000000000000u},  // 1e41
    {0xa3d9e40000000000u, 0xbc627050305adf14u, 0x0000000000000b7au, 0x0000000000000000u},  // 1e42
    {0x6682e80000000000u, 0x5bd86321e38cb6ceu, 0x00000000000072cbu, 0x0000000000000000u},  // 1e43
    {0x011d100000000000u, 0x9673df52e37f2410u, 0x0000000000047bf1u, 0x0000000000000000u},  // 1e44
    {0x0b22a00000000000u, 0xe086b93ce2f768a0u, 0x00000000002cd76fu, 0x0000000000000000u},  // 1e45
    {0x6f5a400000000000u, 0xc5433c60ddaa1640u, 0x0000000001c06a5eu, 0x0000000000000000u},  // 1e46
    {0x5986800000000000u, 0xb4a05bc8a8a4de84u, 0x00000000118427b3u, 0x0000000000000000u},  // 1e47
    {0x7f41000000000000u, 0x0e4395d69670b12bu, 0x00000000af298d05u, 0x0000000000000000u},  // 1e48
    {0xf88a000000000000u, 0x8ea3da61e066ebb2u, 0x00000006d79f8232u, 0x0000000000000000u},  // 1e49
    {0xb564000000000000u, 0x926687d2c40534fdu, 0x000000446c3b15f9u, 0x0000000000000000u},  // 1e50
    {0x15e8000000000000u, 0xb8014e3ba83411e9u, 0x000002ac3a4edbbfu, 0x0000000000000000u},  // 1e51
    {0xdb10000000000000u, 0x300d0e549208b31au, 0x00001aba4714957du, 0x0000000000000000u},  // 1e52
    {0x8ea0000000000000u, 0xe0828f4db456ff0cu, 0x00010b46c6cdd6e3u, 0x0000000000000000u},  // 1e53
    {0x9240000000000000u, 0xc51999090b65f67du, 0x000a70c3c40a64e6u, 0x0000000000000000u},  // 1e54
    {0xb680000000000000u, 0xb2fffa5a71fba0e7u, 0x006867a5a867f103u, 0x0000000000000000u},  // 1e55
    {0x2100000000000000u, 0xfdffc78873d4490du, 0x04140c78940f6a24u, 0x0000000000000000u},  // 1e56
    {0x4a00000000000000u, 0xebfdcb54864ada83u, 0x28c87cb5c89a2571u, 0x0000000000000000u},  // 1e57
    {0xe400000000000000u, 0x37e9f14d3eec8920u, 0x97d4df19d6057673u, 0x0000000000000001u},  // 1e58
    {0xe800000000000000u, 0x2f236d04753d5b48u, 0xee50b7025c36a080u, 0x000000000000000fu},  // 1e59
    {0x1000000000000000u, 0xd762422c946590d9u, 0x4f2726179a224501u, 0x000000000000009fu},  // 1e60
    {0xa000000000000000u, 0x69d695bdcbf7a87au, 0x17877cec0556b212u, 0x0000000000000639u},  // 1e61
    {0x4000000000000000u, 0x2261d969f7ac94cau, 0xeb4ae1383562f4b8u, 0x0000000000003e3au},  // 1e62
    {0x8000000000000000u, 0x57d27e23acbdcfe6u, 0x30eccc3215dd8f31u, 0x0000000000026e4du},  // 1e63
    {0x0000000000000000u, 0x6e38ed64bf6a1f01u, 0xe93ff9f4daa797edu, 0x0000000000184f03u},  // 1e64
    {0x0000000000000000u, 0x4e3945ef7a25360au, 0x1c7fc3908a8bef46u, 0x0000000000f31627u},  // 1e65
    {0x0000000000000000u, 0x0e3cbb5ac5741c64u, 0x1cfda3a5697758bfu, 0x00000000097edd87u},  // 1e66
    {0x0000000000000000u, 0x8e5f518bb6891be8u, 0x21e864761ea97776u, 0x000000005ef4a747u},  // 1e67
    {0x0000000000000000u, 0x8fb92f75215b1710u, 0x5313ec9d329eaaa1u, 0x00000003b58e88c7u},  // 1e68
    {0x0000000000000000u, 0x9d3bda934d8ee6a0u, 0x3ec73e23fa32aa4fu, 0x00000025179157c9u},  // 1e69
    {0x0000000000000000u, 0x245689c107950240u, 0x73c86d67c5faa71cu, 0x00000172ebad6ddcu},  // 1e70
    {0x0000000000000000u, 0x6b61618a4bd21680u, 0x85d4460dbbca8719u, 0x00000e7d34c64a9cu},  // 1e71
    {0x0000000000000000u, 0x31cdcf66f634e100u, 0x3a4abc8955e946feu, 0x000090e40fbeea1du},  // 1e72
    {0x0000000000000000u, 0xf20a1a059e10ca00u, 0x46eb5d5d5b1cc5edu, 0x0005a8e89d752524u},  // 1e73
    {0x0000000000000000u, 0x746504382ca7e400u, 0xc531a5a58f1fbb4bu, 0x003899162693736au},  // 1e74
    {0x0000000000000000u, 0x8bf22a31be8ee800u, 0xb3f07877973d50f2u, 0x0235fadd81c2822bu},  // 1e75
    {0x0000000000000000u, 0x7775a5f171951000u, 0x0764b4abe8652979u, 0x161bcca7119915b5u},  // 1e76
};

int sl_decimal_fits(const uint8_t* le, int width, int precision) {
  if (precision < 1 || precision > 76 || (width != 16 && width != 32)) return 0;
  uint64_t v[4];
  memset(v, 0, sizeof v);
  memcpy(v, le, (size_t)width);  // little-endian host (sl_endian.h assumes it)
  int negative = (le[width - 1] & 0x80) != 0;
  if (width == 16) v[2] = v[3] = negative ? ~UINT64_C(0) : 0;
  if (negative) {  // |v| = ~v + 1
    unsigned carry = 1;
    for (int i = 0; i < 4; ++i) {
      v[i] = ~v[i] + carry;
      carry = carry && v[i] == 0;
    }
  }
  const uint64_t* limit = k_pow10[precision];
  for (int i = 3; i >= 0; --i) {  // |v| < 10^precision
    if (v[i] != limit[i]) return v[i] < limit[i];
  }
  return 0;
}

int sl_decimal_from_be(const uint8_t* be, int64_t n, int width, uint8_t* le) {
  uint8_t sign = (n > 0 && (be[0] & 0x80)) ? 0xFF : 0x00;
  for (int64_t i = 0; i + width < n; ++i) {
    if (be[i] != sign) return EOVERFLOW;
  }
  if (n > width && ((be[n - width] & 0x80) ? 0xFF : 0x00) != sign) return EOVERFLOW;
  memset(le, sign, (size_t)width);
  for (int64_t i = 0; i < width && i < n; ++i) le[i] = be[n - 1 - i];
  return 0;
}

int sl_decimal_text_parse(const uint8_t* p, size_t n, struct sl_decimal_text* out) {
  size_t i = 0;
  out->negative = 0;
  out->n_digits = out->n_lost = out->lost_nonzero = 0;
  out->fraction = out->exponent = 0;
  if (i < n && (p[i] == '+' || p[i] == '-')) out->negative = p[i++] == '-';
  int any = 0, dot = 0;
  for (; i < n; ++i) {
    if (p[i] == '.' && !dot) {
      dot = 1;
      continue;
    }
    if (p[i] < '0' || p[i] > '9') break;
    any = 1;
    out->fraction += dot;
    if (out->n_digits == 0 && p[i] == '0') continue;  // leading zeros
    if (out->n_digits < (int)sizeof out->digits) {
      out->digits[out->n_digits++] = (char)p[i];
    } else {  // past 80 digits only whether they are zero matters
      out->lost_nonzero |= p[i] != '0';
      ++out->n_lost;
    }
  }
  if (!any) return 0;
  if (i < n && (p[i] == 'e' || p[i] == 'E')) {
    int negative = 0, digits = 0;
    if (++i < n && (p[i] == '+' || p[i] == '-')) negative = p[i++] == '-';
    for (; i < n && p[i] >= '0' && p[i] <= '9'; ++i, ++digits) {
      if (out->exponent < 1000000) out->exponent = out->exponent * 10 + (p[i] - '0');
    }
    if (digits == 0) return 0;
    if (out->exponent > 1000000) out->exponent = 1000000;
    if (negative) out->exponent = -out->exponent;
  }
  return i == n;
}

void sl_decimal_from_digits(const char* digits, int n, int64_t zeros, int negative,
                            uint64_t d[4]) {
  for (int k = 0; k < 4; ++k) d[k] = 0;
  for (int64_t i = 0; n > 0 && i < n + zeros; ++i) {
    // d = d * 10 + digit, in 32-bit halves: ISO C has no 128-bit type
    uint64_t carry = i < n ? (uint64_t)(digits[i] - '0') : 0;
    for (int k = 0; k < 4; ++k) {
      uint64_t lo = (d[k] & 0xffffffffu) * 10 + carry;
      uint64_t hi = (d[k] >> 32) * 10 + (lo >> 32);
      d[k] = (hi << 32) | (lo & 0xffffffffu);
      carry = hi >> 32;
    }
  }
  if (negative) {  // two's complement: invert, add one
    unsigned carry = 1;
    for (int k = 0; k < 4; ++k) {
      d[k] = ~d[k] + carry;
      carry = carry && d[k] == 0;
    }
  }
}
