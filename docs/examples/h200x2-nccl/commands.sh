#!/bin/sh
# Every server launch of this sweep, as specsweep would run it (written by rule plan;
# nothing was started). Run one at a time; each blocks until stopped. Secrets are read
# from your environment, never written here. specsweep itself starts engines with a minimal
# environment (see config/README.md, 'environment'); here the variables a launch runs without
# are removed with env -u, the rest of your environment is inherited.

# none-nccl-untuned (vllm, engine vllm)
env -u NCCL_ALGO -u NCCL_BUFFSIZE -u NCCL_MAX_NCHANNELS -u NCCL_NTHREADS -u NCCL_P2P_LEVEL -u NCCL_PROTO CUDA_VISIBLE_DEVICES=0,1 VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/tp2-model --host 127.0.0.1 --port 8000 --tensor-parallel-size 2 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 32 --seed 0 --disable-custom-all-reduce

# none-nccl-tuned (vllm, engine vllm)
env CUDA_VISIBLE_DEVICES=0,1 NCCL_ALGO=Ring NCCL_BUFFSIZE=16777216 NCCL_MAX_NCHANNELS=16 NCCL_NTHREADS=512 NCCL_P2P_LEVEL=SYS NCCL_PROTO=LL VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/tp2-model --host 127.0.0.1 --port 8000 --tensor-parallel-size 2 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 32 --seed 0 --disable-custom-all-reduce

# k1-nccl-untuned (vllm, engine vllm)
env -u NCCL_ALGO -u NCCL_BUFFSIZE -u NCCL_MAX_NCHANNELS -u NCCL_NTHREADS -u NCCL_P2P_LEVEL -u NCCL_PROTO CUDA_VISIBLE_DEVICES=0,1 VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/tp2-model --host 127.0.0.1 --port 8000 --tensor-parallel-size 2 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 32 --seed 0 --disable-custom-all-reduce --speculative-config '{"method": "draft_model", "model": "/tmp/specsweep-node/tp2-model", "num_speculative_tokens": 1}'

# k1-nccl-tuned (vllm, engine vllm)
env CUDA_VISIBLE_DEVICES=0,1 NCCL_ALGO=Ring NCCL_BUFFSIZE=16777216 NCCL_MAX_NCHANNELS=16 NCCL_NTHREADS=512 NCCL_P2P_LEVEL=SYS NCCL_PROTO=LL VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/tp2-model --host 127.0.0.1 --port 8000 --tensor-parallel-size 2 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 32 --seed 0 --disable-custom-all-reduce --speculative-config '{"method": "draft_model", "model": "/tmp/specsweep-node/tp2-model", "num_speculative_tokens": 1}'

# k2-nccl-untuned (vllm, engine vllm)
env -u NCCL_ALGO -u NCCL_BUFFSIZE -u NCCL_MAX_NCHANNELS -u NCCL_NTHREADS -u NCCL_P2P_LEVEL -u NCCL_PROTO CUDA_VISIBLE_DEVICES=0,1 VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/tp2-model --host 127.0.0.1 --port 8000 --tensor-parallel-size 2 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 32 --seed 0 --disable-custom-all-reduce --speculative-config '{"method": "draft_model", "model": "/tmp/specsweep-node/tp2-model", "num_speculative_tokens": 2}'

# k2-nccl-tuned (vllm, engine vllm)
env CUDA_VISIBLE_DEVICES=0,1 NCCL_ALGO=Ring NCCL_BUFFSIZE=16777216 NCCL_MAX_NCHANNELS=16 NCCL_NTHREADS=512 NCCL_P2P_LEVEL=SYS NCCL_PROTO=LL VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/tp2-model --host 127.0.0.1 --port 8000 --tensor-parallel-size 2 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 32 --seed 0 --disable-custom-all-reduce --speculative-config '{"method": "draft_model", "model": "/tmp/specsweep-node/tp2-model", "num_speculative_tokens": 2}'

# k5-nccl-untuned (vllm, engine vllm)
env -u NCCL_ALGO -u NCCL_BUFFSIZE -u NCCL_MAX_NCHANNELS -u NCCL_NTHREADS -u NCCL_P2P_LEVEL -u NCCL_PROTO CUDA_VISIBLE_DEVICES=0,1 VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/tp2-model --host 127.0.0.1 --port 8000 --tensor-parallel-size 2 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 32 --seed 0 --disable-custom-all-reduce --speculative-config '{"method": "draft_model", "model": "/tmp/specsweep-node/tp2-model", "num_speculative_tokens": 5}'

# k5-nccl-tuned (vllm, engine vllm)
env CUDA_VISIBLE_DEVICES=0,1 NCCL_ALGO=Ring NCCL_BUFFSIZE=16777216 NCCL_MAX_NCHANNELS=16 NCCL_NTHREADS=512 NCCL_P2P_LEVEL=SYS NCCL_PROTO=LL VLLM_LOG_STATS_INTERVAL=1 VLLM_SERVER_DEV_MODE=1 VLLM_USE_FLASHINFER_SAMPLER=0 python3 -m vllm.entrypoints.cli.main serve /tmp/specsweep-node/tp2-model --host 127.0.0.1 --port 8000 --tensor-parallel-size 2 --gpu-memory-utilization 0.5 --max-model-len 2048 --max-num-seqs 32 --seed 0 --disable-custom-all-reduce --speculative-config '{"method": "draft_model", "model": "/tmp/specsweep-node/tp2-model", "num_speculative_tokens": 5}'
