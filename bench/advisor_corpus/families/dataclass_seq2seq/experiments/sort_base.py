from seq2seq.config import DataConfig, ExperimentConfig, ModelConfig, OptimConfig, TrainConfig


def get_config() -> ExperimentConfig:
    return ExperimentConfig(
        name="sort_base",
        model=ModelConfig(d_model=128, nhead=4, num_encoder_layers=3, num_decoder_layers=3, dim_feedforward=512),
        data=DataConfig(task="sort", vocab_size=64, num_train=2500, min_len=8, max_len=32),
        optim=OptimConfig(lr=3e-4, warmup_steps=200),
        train=TrainConfig(batch_size=32, num_epochs=1),
    )
