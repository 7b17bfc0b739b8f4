/* Building a pipeline's graph: instance names, edges, validation of inputs and
 * arguments, topological order, operator initialisation. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define STK_DEFAULT_SEED 0x5EEDull

static int find_edge(const stk_pipeline *p, const char *name) {
  for (size_t e = 0; e < p->num_edges; e++)
    if (strcmp(p->edges[e].name, name) == 0) return (int)e;
  return -1;
}

stk__node *stk__graph_find_node(stk_pipeline *p, const char *name) {
  for (size_t n = 0; n < p->num_nodes; n++)
    if (strcmp(p->nodes[n].name, name) == 0) return &p->nodes[n];
  return NULL;
}

/* Names every node: the explicit name, or "<op>_<index>" (stable for a given graph). */
static stk_status name_nodes(stk_pipeline *p) {
  for (size_t n = 0; n < p->num_nodes; n++) {
    stk__node *node = &p->nodes[n];
    if (node->spec->name) {
      node->name = stk__strdup(node->spec->name);
    } else {
      char buf[160];
      snprintf(buf, sizeof buf, "%s_%zu", node->spec->def->schema->name, n);
      node->name = stk__strdup(buf);
    }
    if (!node->name) return STK_ERR_OUT_OF_MEMORY;
    for (size_t m = 0; m < n; m++)
      if (strcmp(p->nodes[m].name, node->name) == 0)
        return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "two operators are named '%s'", node->name);
  }
  return STK_OK;
}

static int expected_outputs(const stk__node *node) {
  const stk__op_def *def = node->spec->def;
  if (def->schema->num_outputs >= 0) return def->schema->num_outputs;
  return def->num_outputs ? def->num_outputs(node) : node->spec->num_outputs;
}

/* Creates one edge per operator output; output names must be unique. */
static stk_status make_edges(stk_pipeline *p) {
  size_t total = 0;
  for (size_t n = 0; n < p->num_nodes; n++) total += (size_t)p->nodes[n].spec->num_outputs;
  p->edges = stk__calloc(total, sizeof(stk__edge), "graph edges");
  if (!p->edges) return STK_ERR_OUT_OF_MEMORY;
  for (size_t n = 0; n < p->num_nodes; n++) {
    stk__node *node = &p->nodes[n];
    stk_op *spec = node->spec;
    node->num_outputs = spec->num_outputs;
    int want = expected_outputs(node);
    if (spec->num_outputs != want)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "operator '%s' (%s) has %d output(s), %d named",
                      node->name, spec->def->schema->name, want, spec->num_outputs);
    node->out_edges = stk__calloc((size_t)want + 1, sizeof(int), "edge indices");
    if (!node->out_edges) return STK_ERR_OUT_OF_MEMORY;
    for (int k = 0; k < spec->num_outputs; k++) {
      if (find_edge(p, spec->outputs[k]) >= 0)
        return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "edge '%s' is produced twice (again by '%s')",
                        spec->outputs[k], node->name);
      stk__edge *e = &p->edges[p->num_edges];
      e->name = spec->outputs[k];
      e->producer = (int)n;
      e->producer_out = k;
      e->output_index = -1;
      e->slot = -1;
      node->out_edges[k] = (int)p->num_edges++;
    }
  }
  return STK_OK;
}

/* Resolves inputs and per-sample argument edges; checks required arguments. */
static stk_status resolve_node(stk_pipeline *p, stk__node *node) {
  stk_op *spec = node->spec;
  const stk_op_schema *sc = spec->def->schema;
  if (spec->num_inputs < sc->min_inputs)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "operator '%s' (%s) needs at least %d input(s), has %d", node->name, sc->name,
                    sc->min_inputs, spec->num_inputs);
  node->in_edges = stk__calloc((size_t)spec->num_inputs + 1, sizeof(int), "edge indices");
  if (!node->in_edges) return STK_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < spec->num_inputs; i++) {
    int e = find_edge(p, spec->inputs[i]);
    if (e < 0)
      return STK_FAIL(STK_ERR_NOT_FOUND,
                      "operator '%s': input '%s' is not produced by any operator", node->name,
                      spec->inputs[i]);
    node->in_edges[i] = e;
  }
  for (int a = 0; a < sc->num_args; a++) {
    stk__argval *v = &spec->args[a];
    if ((sc->args[a].flags & STK_ARGF_REQUIRED) && !v->given)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "operator '%s' (%s): argument '%s' is required",
                      node->name, sc->name, sc->args[a].name);
    if (v->edge_name && (v->edge = find_edge(p, v->edge_name)) < 0)
      return STK_FAIL(STK_ERR_NOT_FOUND,
                      "operator '%s': argument '%s' is fed by '%s', which no operator produces",
                      node->name, sc->args[a].name, v->edge_name);
  }
  for (int g = 0; g < spec->num_guards; g++)
    if ((spec->guards[g].edge = find_edge(p, spec->guards[g].edge_name)) < 0)
      return STK_FAIL(STK_ERR_NOT_FOUND,
                      "operator '%s': condition '%s' is not produced by any operator", node->name,
                      spec->guards[g].edge_name);
  if (spec->device != STK_DEVICE_CPU) {
    if (!spec->def->run_gpu)
      return STK_FAIL(STK_ERR_UNSUPPORTED,
                      "operator '%s' (%s) has no %s implementation yet; use device=\"cpu\"",
                      node->name, sc->name, stk__device_name(spec->device));
    p->has_gpu = true;
  }
  return STK_OK;
}

/* Kahn's algorithm over data inputs and argument feeds; a cycle is an error. */
static stk_status sort_nodes(stk_pipeline *p) {
  size_t n = p->num_nodes;
  int *indegree = stk__calloc(n, sizeof(int), "graph order");
  p->order = stk__calloc(n, sizeof(int), "graph order");
  if (!indegree || !p->order) {
    free(indegree);
    return STK_ERR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < n; i++) {
    stk__node *node = &p->nodes[i];
    indegree[i] = node->spec->num_inputs + node->spec->num_guards;
    for (int a = 0; a < node->spec->def->schema->num_args; a++)
      if (node->spec->args[a].edge >= 0) indegree[i]++;
  }
  size_t done = 0;
  bool progress = true;
  while (done < n && progress) { /* O(n^2), fine for graphs of tens of nodes */
    progress = false;
    for (size_t i = 0; i < n; i++) {
      if (indegree[i] != 0) continue;
      indegree[i] = -1;
      p->order[done++] = (int)i;
      progress = true;
      for (size_t j = 0; j < n; j++) {
        stk__node *c = &p->nodes[j];
        for (int k = 0; k < c->spec->num_inputs; k++)
          if (p->edges[c->in_edges[k]].producer == (int)i) indegree[j]--;
        for (int a = 0; a < c->spec->def->schema->num_args; a++) {
          int e = c->spec->args[a].edge;
          if (e >= 0 && p->edges[e].producer == (int)i) indegree[j]--;
        }
        for (int g = 0; g < c->spec->num_guards; g++)
          if (p->edges[c->spec->guards[g].edge].producer == (int)i) indegree[j]--;
      }
    }
  }
  stk_status st = STK_OK;
  if (done < n) {
    for (size_t i = 0; i < n; i++)
      if (indegree[i] > 0) {
        st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "the graph has a cycle through operator '%s'",
                      p->nodes[i].name);
        break;
      }
  }
  free(indegree);
  return st;
}

static stk_status resolve_outputs(stk_pipeline *p) {
  if (p->num_outputs == 0)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "the pipeline has no outputs (call stk_pipeline_set_outputs)");
  p->output_edges = stk__calloc(p->num_outputs, sizeof(int), "outputs");
  if (!p->output_edges) return STK_ERR_OUT_OF_MEMORY;
  for (size_t o = 0; o < p->num_outputs; o++) {
    int e = find_edge(p, p->output_names[o]);
    if (e < 0)
      return STK_FAIL(STK_ERR_NOT_FOUND, "output '%s' is not produced by any operator",
                      p->output_names[o]);
    if (p->edges[e].output_index >= 0)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "output '%s' is listed twice", p->output_names[o]);
    p->edges[e].output_index = (int)o;
    p->output_edges[o] = e;
  }
  return STK_OK;
}

static bool on_cpu(const stk_pipeline *p, int edge) {
  return p->nodes[p->edges[edge].producer].spec->device == STK_DEVICE_CPU;
}

static stk_status give_slot(stk_pipeline *p, int edge) {
  if (p->edges[edge].slot >= 0 || !on_cpu(p, edge)) return STK_OK;
  p->edges[edge].slot = (int)p->num_collected;
  p->collected[p->num_collected++] = edge;
  return STK_OK;
}

/* Collected edges: CPU outputs that outlive a sample's chain — pipeline outputs and
 * everything a mixed/GPU operator reads (data inputs, per-sample arguments). A CPU
 * operator may not read a GPU edge. */
static stk_status collect_edges(stk_pipeline *p) {
  p->collected = stk__calloc(p->num_edges + 1, sizeof(int), "collected edges");
  if (!p->collected) return STK_ERR_OUT_OF_MEMORY;
  for (size_t o = 0; o < p->num_outputs; o++) STK_TRY(give_slot(p, p->output_edges[o]));
  for (size_t n = 0; n < p->num_nodes; n++) {
    stk__node *node = &p->nodes[n];
    bool gpu = node->spec->device != STK_DEVICE_CPU;
    for (int i = 0; i < node->spec->num_inputs; i++) {
      int e = node->in_edges[i];
      if (gpu)
        STK_TRY(give_slot(p, e));
      else if (!on_cpu(p, e))
        return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                        "operator '%s' runs on the CPU but its input '%s' is on the GPU (GPU data "
                        "cannot come back)",
                        node->name, p->edges[e].name);
    }
    for (int a = 0; a < node->spec->def->schema->num_args; a++) {
      int e = node->spec->args[a].edge;
      if (e < 0) continue;
      if (!on_cpu(p, e))
        return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                        "operator '%s': argument '%s' must come from a CPU operator", node->name,
                        node->spec->def->schema->args[a].name);
      if (gpu) STK_TRY(give_slot(p, e));
    }
    for (int g = 0; g < node->spec->num_guards;
         g++) { /* predicates are read per sample on the host */
      int e = node->spec->guards[g].edge;
      if (!on_cpu(p, e))
        return STK_FAIL(
            STK_ERR_INVALID_ARGUMENT,
            "operator '%s': condition '%s' is computed on the GPU; conditions must come from CPU "
            "operators (as in DALI: compute the predicate on the CPU)",
            node->name, p->edges[e].name);
      if (gpu) STK_TRY(give_slot(p, e));
    }
  }
  return STK_OK;
}

bool stk__node_is_batch(const stk__node *node) {
  const stk__op_def *def = node->spec->def;
  bool batch = (def->schema->flags & STK_OPF_BATCH) || (def->batch_when && def->batch_when(node));
  return batch && node->spec->device == STK_DEVICE_CPU && def->run_batch;
}

/* The pass in which edge `e` has its value: a batch operator's outputs exist only after
 * the pass it ends. GPU edges count as pass 0 (no CPU operator reads them). */
static int ready_pass(const stk_pipeline *p, int e) {
  const stk__node *prod = &p->nodes[p->edges[e].producer];
  if (prod->spec->device != STK_DEVICE_CPU) return 0;
  return prod->pass + (stk__node_is_batch(prod) ? 1 : 0);
}

/* The k-th edge the node reads, over its data inputs, argument feeds and guards in turn:
 * -1 for an argument that is not fed, -2 past the end. */
static int read_edge(const stk__node *node, int k) {
  const stk_op *spec = node->spec;
  if (k < spec->num_inputs) return node->in_edges[k];
  k -= spec->num_inputs;
  if (k < spec->def->schema->num_args) return spec->args[k].edge;
  k -= spec->def->schema->num_args;
  return k < spec->num_guards ? spec->guards[k].edge : -2;
}

/* Splits the CPU stage into passes at the batch operators (in graph order): a node runs
 * in the first pass where everything it reads is ready. Values that cross a pass (and
 * everything a batch operator reads or writes, which it reaches across samples) must
 * outlive a sample's chain: they become collected edges. */
static stk_status plan_passes(stk_pipeline *p) {
  p->num_passes = 1;
  for (size_t k = 0; k < p->num_nodes; k++) {
    stk__node *node = &p->nodes[p->order[k]];
    int pass = 0;
    for (int j = 0, e; (e = read_edge(node, j)) != -2; j++)
      if (e >= 0 && ready_pass(p, e) > pass) pass = ready_pass(p, e);
    node->pass = pass;
    if (node->spec->device != STK_DEVICE_GPU && pass + 1 > p->num_passes) p->num_passes = pass + 1;
  }
  for (size_t k = 0; k < p->num_nodes; k++) {
    stk__node *node = &p->nodes[k];
    bool batch = stk__node_is_batch(node);
    for (int j = 0, e; (e = read_edge(node, j)) != -2; j++)
      if (e >= 0 && (batch || p->nodes[p->edges[e].producer].pass != node->pass))
        STK_TRY(give_slot(p, e));
    for (int o = 0; batch && o < node->num_outputs; o++) STK_TRY(give_slot(p, node->out_edges[o]));
  }
  return STK_OK;
}

/* Attaches host functions registered by instance name (python_function). */
static stk_status attach_host_functions(stk_pipeline *p) {
  for (stk__host_reg *r = p->host_regs; r; r = r->next) {
    stk__node *node = stk__graph_find_node(p, r->op_name);
    if (!node)
      return STK_FAIL(STK_ERR_NOT_FOUND, "no operator named '%s' for the host function",
                      r->op_name);
    node->host_fn = r->fn;
    node->host_user = r->user;
  }
  return STK_OK;
}

static uint64_t node_seed(stk_pipeline *p, stk__node *node) {
  const stk_op_schema *sc = node->spec->def->schema;
  for (int a = 0; a < sc->num_args; a++)
    if (strcmp(sc->args[a].name, "seed") == 0 && node->spec->args[a].given &&
        node->spec->args[a].i >= 0)
      return stk__mix64((uint64_t)node->spec->args[a].i, 0x0ddba11ull);
  int64_t seed = p->settings[STK_PIPE_SEED];
  return stk__mix64(seed < 0 ? STK_DEFAULT_SEED : (uint64_t)seed, stk__hash_str(node->name));
}

static stk_status init_nodes(stk_pipeline *p) {
  int readers = 0;
  for (size_t i = 0; i < p->num_nodes; i++) {
    stk__node *node = &p->nodes[p->order[i]];
    node->rng_key = node_seed(p, node);
    node->reader_slot = node->spec->def->plan ? readers++ : -1;
    if (node->spec->def->init) {
      stk_status st = node->spec->def->init(node);
      if (st != STK_OK) return stk__wrap_operator(st, node->name);
    }
  }
  p->num_readers = readers;
  /* Mix the shard of the first reader into every key: shards draw different numbers. */
  for (size_t i = 0; i < p->num_nodes; i++) {
    stk__node *node = &p->nodes[i];
    if (node->reader_slot != 0 || !node->spec->def->reader_meta) continue;
    stk_reader_meta meta;
    if (node->spec->def->reader_meta(node, &meta) == STK_OK && meta.shard_id > 0)
      for (size_t j = 0; j < p->num_nodes; j++)
        p->nodes[j].rng_key = stk__mix64(p->nodes[j].rng_key, (uint64_t)meta.shard_id);
  }
  return STK_OK;
}

stk_status stk__graph_build(stk_pipeline *p) {
  p->nodes = stk__calloc(p->num_ops ? p->num_ops : 1, sizeof(stk__node), "graph nodes");
  if (!p->nodes) return STK_ERR_OUT_OF_MEMORY;
  p->num_nodes = p->num_ops;
  if (p->num_nodes == 0) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "the pipeline has no operators");
  for (size_t n = 0; n < p->num_nodes; n++) {
    p->nodes[n].spec = p->ops[n];
    p->nodes[n].pipe = p;
    p->nodes[n].index = (int)n;
    p->nodes[n].reader_slot = -1;
  }
  STK_TRY(name_nodes(p));
  STK_TRY(make_edges(p));
  for (size_t n = 0; n < p->num_nodes; n++) STK_TRY(resolve_node(p, &p->nodes[n]));
  STK_TRY(resolve_outputs(p));
  STK_TRY(collect_edges(p));
  STK_TRY(sort_nodes(p));
  STK_TRY(plan_passes(p));
  STK_TRY(attach_host_functions(p));
  return init_nodes(p);
}

void stk__graph_free(stk_pipeline *p) {
  for (size_t n = 0; n < p->num_nodes; n++) {
    stk__node *node = &p->nodes[n];
    if (node->state && node->spec->def->destroy) node->spec->def->destroy(node);
    free(node->name);
    free(node->in_edges);
    free(node->out_edges);
  }
  free(p->nodes);
  free(p->order);
  free(p->edges);
  free(p->output_edges);
  free(p->collected);
  p->collected = NULL;
  p->num_collected = 0;
  p->has_gpu = false;
  p->nodes = NULL;
  p->order = NULL;
  p->edges = NULL;
  p->output_edges = NULL;
  p->num_nodes = p->num_edges = 0;
}
