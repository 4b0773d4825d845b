// Validates Karpenter and KEDA custom resources with the schemas of the @kubernetes-models packages (generated from
// each project's API types: tommy351/kubernetes-models-ts). Reads a JSON list of resources on stdin, the packages'
// install folder as its argument; writes one JSON line per resource: its kind, name and the schema's errors.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const MODELS = {
  "karpenter.sh/v1/NodePool": "@kubernetes-models/karpenter/karpenter.sh/v1/NodePool.js",
  "karpenter.k8s.aws/v1/EC2NodeClass": "@kubernetes-models/karpenter/karpenter.k8s.aws/v1/EC2NodeClass.js",
  "keda.sh/v1alpha1/ScaledObject": "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject.js",
  "keda.sh/v1alpha1/TriggerAuthentication": "@kubernetes-models/keda/keda.sh/v1alpha1/TriggerAuthentication.js",
};

const root = join(process.argv[2], "node_modules");
const resources = JSON.parse(readFileSync(0, "utf8"));
for (const resource of resources) {
  const key = `${resource.apiVersion}/${resource.kind}`;
  const line = { kind: resource.kind, name: resource.metadata?.name, errors: [] };
  if (!(key in MODELS)) {
    line.errors.push(`no schema for ${key}`);
  } else {
    const module = await import(pathToFileURL(join(root, MODELS[key])).href);
    try {
      new module[resource.kind](resource).validate();
    } catch (error) {
      line.errors.push(String(error.message ?? error));
    }
  }
  console.log(JSON.stringify(line));
}
