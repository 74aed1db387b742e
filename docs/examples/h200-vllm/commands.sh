#!/bin/sh
# Every server launch of this sweep, as specsweep would run it (written by rule plan;
# nothing was started). Run one at a time; each blocks until stopped. Secrets are read
# from your environment, never written here. specsweep itself starts engines with a minimal
# environment (see config/README.md, 'environment'); here the variables a launch runs without
# are removed with env -u, the rest of your environment is inherited.

# baseline (vllm, engine vllm)
env CUDA_VISIBLE_DEVICES=0 VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/SmolLM2-135M-Instruct --host 127.0.0.1 --port 8000 --tensor-parallel-size 1 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 64 --seed 0

# ngram-k1 (vllm, engine vllm)
env CUDA_VISIBLE_DEVICES=0 VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/SmolLM2-135M-Instruct --host 127.0.0.1 --port 8000 --tensor-parallel-size 1 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 64 --seed 0 --speculative-config '{"method": "ngram", "prompt_lookup_max": 4, "prompt_lookup_min": 2, "num_speculative_tokens": 1}'

# ngram-k3 (vllm, engine vllm)
env CUDA_VISIBLE_DEVICES=0 VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/SmolLM2-135M-Instruct --host 127.0.0.1 --port 8000 --tensor-parallel-size 1 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 64 --seed 0 --speculative-config '{"method": "ngram", "prompt_lookup_max": 4, "prompt_lookup_min": 2, "num_speculative_tokens": 3}'

# ngram-k5 (vllm, engine vllm)
env CUDA_VISIBLE_DEVICES=0 VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/SmolLM2-135M-Instruct --host 127.0.0.1 --port 8000 --tensor-parallel-size 1 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 64 --seed 0 --speculative-config '{"method": "ngram", "prompt_lookup_max": 4, "prompt_lookup_min": 2, "num_speculative_tokens": 5}'

# self-draft (vllm, engine vllm)
env CUDA_VISIBLE_DEVICES=0 VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/SmolLM2-135M-Instruct --host 127.0.0.1 --port 8000 --tensor-parallel-size 1 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 64 --seed 0 --speculative-config '{"method": "draft_model", "model": "/tmp/specsweep-node/SmolLM2-135M-Instruct", "num_speculative_tokens": 3}'
