// Placeholder: the routing work replaces this with the real models.yaml compiler.
import { writeFileSync } from "node:fs";
writeFileSync("src/routing/models.generated.ts", "// Generated from models.yaml by scripts/compile-models.ts. Do not edit.\nexport const compiled = { models: [], defaultModel: null, agents: [] } as const;\n");
