"""Admission webhooks (BEHAVIOR.md §8.3): pod mutation and validation, Queue, PodGroup and Topology validation.

`review` decodes AdmissionReviews and encodes verdicts; `pod`, `podmutate` (with `gpusharing`), `queue`,
`podgroup` and `topology` hold the rules; `webhooks` routes paths to rules; `server` is the HTTPS transport;
`certs` manages the serving certificate; `service` puts them together for `kai admission`.
"""
