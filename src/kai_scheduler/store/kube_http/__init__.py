"""HTTP to a kube-apiserver for `KubeStore`, one module per concern.

- `config`: the API client configured from a kubeconfig or the in-cluster service account (the official
  `kubernetes` client's loaders, TLS settings and bearer-token refresh hook).
- `transport`: `Transport`, one request with a JSON answer (or a watch's stream): the target and headers built
  directly, sent through `connection`'s pool, rate limited (`rate_limit`) and retried as the server asks
  (`retry`); bodies encoded and decoded with orjson (`body`), error answers made store errors (`errors`).
- `connection`: the urllib3 pool of the API server's connections: each request goes out in one write, after
  `send_check` passed; each socket is known to the store's `Cancellation` (`cancellation`), which can cut it.
- `reachability`: one warning when the API server stops answering and one when it answers again.
- `timing`: where time is read and waited for (tests pass a fake).
"""
