"""HTTP to a kube-apiserver for `KubeStore`, one module per concern.

- `config`: the API client configured from a kubeconfig or the in-cluster service account (the official
  `kubernetes` client's loaders, TLS settings and bearer-token refresh hook).
- `transport`: `Transport`, one request with a JSON answer (or a watch's stream): the target and headers built
  directly, sent through `curl` (or a watch through `connection`'s pool), rate limited (`rate_limit`) and retried
  as the server asks (`retry`); bodies encoded and decoded with orjson (`body`), error answers made store errors
  (`errors`).
- `curl`: the requests with a whole answer through libcurl (pycurl), handles reused per sending thread.
- `connection`: the store's libcurl sender and urllib3 pool (the watches', and every request's through a proxy),
  with the client library's settings. A request goes out only after its last check passed (`send_check` for
  urllib3's connections; a libcurl handle makes the same checks itself); each socket is known to the store's
  `Cancellation` (`cancellation`), which can cut it.
- `reachability`: one warning when the API server stops answering and one when it answers again.
- `timing`: where time is read and waited for (tests pass a fake).
"""
