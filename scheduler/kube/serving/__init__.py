"""The secure server (apiserver's secure serving): /healthz, /livez, /readyz and /metrics over HTTPS, delegated
authentication and authorization, the self-signed certificate."""
