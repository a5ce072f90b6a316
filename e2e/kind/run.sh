#!/usr/bin/env bash
# Run spread-scheduler and the e2e suite on kind. Needs Docker, kind and kubectl; it cannot run on the
# machines this project is developed on (no Docker engine there), where e2e/cluster.py is used instead.
#   e2e/kind/run.sh            # create the cluster, build+load the image, apply manifests/, run e2e
#   e2e/kind/run.sh --delete   # remove the cluster
set -euo pipefail
cd "$(dirname "$0")/../.."
NAME=spread-scheduler
IMAGE=spread-scheduler:0.1.0
if [[ "${1:-}" == "--delete" ]]; then kind delete cluster --name "$NAME"; exit 0; fi
kind get clusters | grep -qx "$NAME" || kind create cluster --config e2e/kind/cluster.yaml --wait 120s
docker build -t "$IMAGE" .
kind load docker-image "$IMAGE" --name "$NAME"
kubectl --context "kind-$NAME" apply -k manifests/
kubectl --context "kind-$NAME" -n spread-scheduler rollout status deployment/spread-scheduler --timeout=180s
# Smoke test on real kubelets: a Deployment spread over the three zones by spread-scheduler.
kubectl --context "kind-$NAME" apply -f e2e/kind/demo.yaml
kubectl --context "kind-$NAME" rollout status deployment/spread-demo --timeout=180s
kubectl --context "kind-$NAME" get pods -l app=spread-demo \
  -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort | uniq -c
# The e2e suite (e2e/*.py) assumes a cluster with no nodes of its own and no other scheduler named
# spread-scheduler, so it runs against e2e/cluster.py's control plane, not against kind.
