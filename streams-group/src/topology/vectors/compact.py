# Block-form cases with Kafka's answers to the two-line form of kafka_vectors.txt; with a count, a sample of that many cases spread over the outcomes.
import sys, random
def convert(block):
    spec, res = block.split('result\n')
    topics, subs = [], []
    for line in spec.splitlines()[1:]:
        f = line.split(' ')
        if f[0] == 'topic': topics.append(f'{f[1]}={f[2]}')
        elif f[0] == 'sub': subs.append({'id': f[1], 'src': [], 'rsrc': [], 'sink': [], 'cl': [], 'grp': []})
        elif f[0] in ('src', 'sink'): subs[-1][f[0]].append(f[1])
        elif f[0] in ('rsrc', 'cl'): subs[-1][f[0]].append(f'{f[1]}:{f[2]}')
        elif f[0] == 'group': subs[-1]['grp'].append(f'{f[1]}/{f[2]}')
    parts = [','.join(topics) or '-']
    for s in subs:
        parts.append(';'.join([s['id']] + [f"{k}={','.join(s[k])}" for k in ('src','rsrc','sink','cl')] + ['grp=' + ' '.join(s['grp'])]))
    results = [l for l in res.splitlines() if l not in ('end',)]
    return 'case ' + ' || '.join(parts) + '\n' + '=> ' + ' || '.join(results) + '\n'
if __name__ == '__main__':
    text = open(sys.argv[1]).read()
    blocks = ['case\n' + b for b in text.split('case\n')[1:]]
    if len(sys.argv) > 3:
        n = int(sys.argv[3]); rnd = random.Random(7)
        def kind(b):
            first = b.split('result\n')[1].splitlines()[0]
            return ' '.join(first.split()[:2]) if first.startswith(('error','invalid')) else 'ready'
        by = {}
        for b in blocks: by.setdefault(kind(b), []).append(b)
        share = {'ready': .25, 'error MISSING_INTERNAL_TOPICS': .25, 'error INCORRECTLY_PARTITIONED_TOPICS': .22, 'error MISSING_SOURCE_TOPICS': .06, 'invalid StreamsInvalidTopology': .12, 'invalid InvalidTopic': .04, 'invalid Internal': .06}
        chosen = []
        for k, v in by.items():
            v = [b for b in v if len(b) < 2500] or v
            chosen += rnd.sample(v, min(len(v), int(n * share[k])))
        rnd.shuffle(chosen)
        blocks = chosen
    with open(sys.argv[2], 'w') as f:
        for b in blocks: f.write(convert(b))
