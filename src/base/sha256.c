/* sha256.c — SHA-256 through OpenSSL's EVP interface (see md_sha256.h). */
#include "base/md_sha256.h"

#include <openssl/evp.h>
#include <pthread.h>

/* The SHA-256 implementation, fetched once (a fetch per digest costs a
 * lookup under a lock in OpenSSL 3). */
static EVP_MD *g_md;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void fetch(void)
{
    g_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static const EVP_MD *sha256_md(void)
{
    pthread_once(&g_once, fetch);
    return g_md ? g_md : EVP_sha256();
}

enum md_err md_sha256(const void *p, size_t n, unsigned char out[MD_SHA256_LEN])
{
    unsigned len = 0;
    static const char empty = 0;
    int ok = EVP_Digest(p ? p : &empty, n, out, &len, sha256_md(), NULL);
    return ok && len == MD_SHA256_LEN ? MD_OK : MD_ENOMEM;
}

enum md_err md_sha256_parts(const struct md_sha256_part *parts, size_t count,
                            unsigned char out[MD_SHA256_LEN])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned len = 0;
    int ok = ctx && EVP_DigestInit_ex(ctx, sha256_md(), NULL);
    for (size_t i = 0; ok && i < count; i++)
        if (parts[i].n)
            ok = EVP_DigestUpdate(ctx, parts[i].p, parts[i].n);
    ok = ok && EVP_DigestFinal_ex(ctx, out, &len) && len == MD_SHA256_LEN;
    EVP_MD_CTX_free(ctx);
    return ok ? MD_OK : MD_ENOMEM;
}

void md_sha256_hex(const unsigned char d[MD_SHA256_LEN], char hex[MD_SHA256_HEX + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < MD_SHA256_LEN; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[MD_SHA256_HEX] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int md_sha256_parse_hex(const char *hex, size_t len, unsigned char out[MD_SHA256_LEN])
{
    if (len != MD_SHA256_HEX)
        return -1;
    for (size_t i = 0; i < MD_SHA256_LEN; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}
