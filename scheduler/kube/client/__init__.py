"""The API client, as client-go's: kubeconfig (tools/clientcmd), credentials and the exec plugin, transport,
rest, and the list and watch the informer drives (tools/cache)."""
