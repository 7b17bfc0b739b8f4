/* Remote reads (io/remote.h): the input is the raw bytes a server answers (status line,
 * headers, body; Content-Length and Content-Range may lie, the body may be short, long or
 * chunked badly), served on 127.0.0.1 by a thread of this process. A range read, a
 * whole-object read and a size query must never write outside their buffers, and must
 * either succeed with what they promise or fail; the input is also parsed as an S3
 * listing. One connection per call: retries are off. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "fuzz_util.h"
#include "io/remote.h"
#include "io/remote_url.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* The server's own copy: a connection the client gave up on may still be served after
 * the input it came from is freed. Replaced under `mu`, which a send holds. */
static uint8_t *answer;
static size_t answer_len;
static int port = -1;

/* Reads the request up to its blank line (bodies are not sent: GET and HEAD only). */
static void skip_request(int c) {
  char buf[4096];
  size_t n = 0;
  while (n < sizeof buf) {
    ssize_t k = recv(c, buf + n, sizeof buf - n, 0);
    if (k <= 0) return;
    n += (size_t)k;
    for (size_t i = 3; i < n; i++)
      if (memcmp(buf + i - 3, "\r\n\r\n", 4) == 0) return;
  }
}

static void *serve(void *arg) {
  int s = *(int *)arg;
  for (;;) {
    int c = accept(s, NULL, NULL);
    if (c < 0) continue;
    skip_request(c);
    pthread_mutex_lock(&mu);
    size_t done = 0;
    while (done < answer_len) {
      ssize_t k = send(c, answer + done, answer_len - done, MSG_NOSIGNAL);
      if (k <= 0) break;
      done += (size_t)k;
    }
    pthread_mutex_unlock(&mu);
    close(c);
  }
  return NULL;
}

static void start_server(void) {
  static int s;
  s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 16) != 0 ||
      getsockname(s, (struct sockaddr *)&a, &len) != 0)
    abort();
  port = ntohs(a.sin_port);
  pthread_t t;
  pthread_create(&t, NULL, serve, &s);
  pthread_detach(t);
  setenv("STK_REMOTE_RETRIES", "0", 1);
  setenv("STK_REMOTE_TIMEOUT", "1", 1);
  setenv("STK_REMOTE_CONNECTIONS", "0", 1); /* every call a fresh connection */
}

static stk_status count(void *user, const char *key, size_t key_len, int64_t size) {
  (void)key;
  (void)size;
  if (key[key_len] != '\0') __builtin_trap();
  ++*(int *)user;
  return STK_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (port < 0) start_server();
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  memcpy(copy, data, size);
  pthread_mutex_lock(&mu);
  free(answer);
  answer = copy;
  answer_len = size;
  pthread_mutex_unlock(&mu);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/obj", port);
  /* a range read into a buffer with guard bytes on both sides */
  uint8_t buf[64 + 100 + 64];
  memset(buf, 0xA5, sizeof buf);
  (void)stk__remote_read(url, 10, buf + 64, 100);
  for (size_t i = 0; i < 64; i++)
    if (buf[i] != 0xA5 || buf[64 + 100 + i] != 0xA5) __builtin_trap();
  uint8_t *all = NULL;
  size_t n = 0;
  if (stk__remote_get(url, 4096, &all, &n) == STK_OK && n > 4096) __builtin_trap();
  free(all);
  int64_t sz = -1;
  if (stk__remote_size(url, &sz) == STK_OK && sz < 0) __builtin_trap();
  char *next = NULL;
  int entries = 0;
  char *text = malloc(size + 1);
  if (text) {
    memcpy(text, data, size);
    text[size] = 0;
    (void)stk__s3_parse_list(text, size, count, &entries, &next);
    free(next);
    free(text);
  }
  return 0;
}
